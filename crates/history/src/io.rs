//! Writing and reading JSON lines.

use std::io::{self, BufRead, Write};

use serde_json::Value;

use super::error::{HistoryError, LineProblem};
use super::line::{Line, Versioned};
use super::{History, SCHEMA_VERSION};

impl Line {
    /// Parses one line (without its newline) as the reader does: a JSON object whose `v` is
    /// [`SCHEMA_VERSION`], whose `kind` is one of [`Line::KINDS`], and whose other fields are
    /// exactly those of that kind.
    ///
    /// # Errors
    /// What is wrong with the line; [`History::read_jsonl`] adds the file and line number.
    pub fn from_json(text: &str) -> Result<Line, LineProblem> {
        if text.trim().is_empty() {
            return Err(LineProblem::Empty);
        }
        let value: Value = serde_json::from_str(text).map_err(|e| LineProblem::NotJson {
            detail: without_position(&e),
        })?;
        let Value::Object(mut object) = value else {
            return Err(LineProblem::NotObject);
        };
        match object.remove("v") {
            None => return Err(LineProblem::MissingVersion),
            Some(v) if v.as_u64() == Some(u64::from(SCHEMA_VERSION)) => {}
            Some(v) => {
                return Err(LineProblem::WrongVersion {
                    found: v.to_string(),
                });
            }
        }
        let kind = match object.get("kind") {
            Some(Value::String(kind)) => kind.clone(),
            _ => return Err(LineProblem::MissingKind),
        };
        if !Line::KINDS.contains(&kind.as_str()) {
            return Err(LineProblem::UnknownKind { kind });
        }
        serde_json::from_value(Value::Object(object)).map_err(|e| LineProblem::Invalid {
            kind,
            detail: e.to_string(),
        })
    }
}

/// serde_json's message without its " at line 1 column N" (the line is always 1 here), with
/// the column kept.
fn without_position(e: &serde_json::Error) -> String {
    let message = e.to_string();
    let suffix = format!(" at line {} column {}", e.line(), e.column());
    match message.strip_suffix(&suffix) {
        Some(bare) => format!("{bare} (column {})", e.column()),
        None => message,
    }
}

/// Writes history lines, one JSON object and one `\n` each, in the order given.
///
/// Output is a pure function of the lines: fields in declaration order, no whitespace, no
/// floats, no maps with unordered keys. The writer does not buffer; hand it a
/// [`io::BufWriter`] for files.
#[derive(Debug)]
pub struct HistoryWriter<W: Write> {
    out: W,
    lines: u64,
}

impl<W: Write> HistoryWriter<W> {
    /// A writer appending to `out`.
    pub fn new(out: W) -> Self {
        HistoryWriter { out, lines: 0 }
    }

    /// Writes `line` and its newline.
    ///
    /// # Errors
    /// The underlying writer's.
    pub fn write(&mut self, line: &Line) -> io::Result<()> {
        serde_json::to_writer(&mut self.out, &Versioned::new(line)).map_err(io::Error::from)?;
        self.out.write_all(b"\n")?;
        self.lines += 1;
        Ok(())
    }

    /// Lines written so far; the next line's number is this plus one.
    pub fn lines_written(&self) -> u64 {
        self.lines
    }

    /// Flushes the underlying writer.
    ///
    /// # Errors
    /// The underlying writer's.
    pub fn flush(&mut self) -> io::Result<()> {
        self.out.flush()
    }

    /// Flushes and returns the underlying writer.
    ///
    /// # Errors
    /// The underlying writer's.
    pub fn into_inner(mut self) -> io::Result<W> {
        self.out.flush()?;
        Ok(self.out)
    }
}

/// Reads every line of `reader`, naming `file` in errors; no validation across lines (live
/// mode reads its per-process files with it).
pub fn read_lines(mut reader: impl BufRead, file: &str) -> Result<Vec<Line>, HistoryError> {
    let mut lines = Vec::new();
    let mut buf = Vec::new();
    for number in 1u64.. {
        buf.clear();
        let read = reader
            .read_until(b'\n', &mut buf)
            .map_err(|source| HistoryError::Io {
                file: file.to_string(),
                line: number,
                source,
            })?;
        if read == 0 {
            break;
        }
        let bad = |problem| HistoryError::Line {
            file: file.to_string(),
            line: number,
            problem,
        };
        let text = buf.strip_suffix(b"\n").unwrap_or(&buf);
        let text = std::str::from_utf8(text).map_err(|_| bad(LineProblem::NotUtf8))?;
        lines.push(Line::from_json(text).map_err(bad)?);
    }
    Ok(lines)
}

impl History {
    /// Writes every line as JSON lines (see [`HistoryWriter`]).
    ///
    /// # Errors
    /// The writer's.
    pub fn write_jsonl(&self, out: impl Write) -> io::Result<()> {
        let mut writer = HistoryWriter::new(io::BufWriter::new(out));
        for line in self.lines() {
            writer.write(line)?;
        }
        writer.flush()
    }

    /// The whole history as JSON lines.
    pub fn to_jsonl(&self) -> String {
        let mut out = Vec::new();
        self.write_jsonl(&mut out)
            .expect("writing to memory cannot fail");
        String::from_utf8(out).expect("JSON is UTF-8")
    }

    /// Reads a history from `reader`, calling it `name` in errors, and validates it
    /// ([`History::validate`]).
    ///
    /// # Errors
    /// The first bad line, with `name` and its 1-based number; never panics on bad input.
    pub fn read_jsonl(
        reader: impl BufRead,
        name: impl Into<String>,
    ) -> Result<History, HistoryError> {
        let name = name.into();
        let lines = read_lines(reader, &name)?;
        let history = History::from_lines(name, lines);
        history.validate()?;
        Ok(history)
    }

    /// Reads and validates the history file at `path`, named by its path in errors. The file
    /// is read through [`crate::input::read_bytes`]: a regular file of at most
    /// [`crate::input::HISTORY_LIMIT`] bytes, so a FIFO or `/dev/zero` is refused at once.
    ///
    /// # Errors
    /// As [`History::read_jsonl`]; an unreadable file is [`HistoryError::Io`] at line 1, one
    /// that is not a regular file or is over the cap [`HistoryError::Input`].
    pub fn read_jsonl_path(path: impl AsRef<std::path::Path>) -> Result<History, HistoryError> {
        let path = path.as_ref();
        let name = path.display().to_string();
        let bytes = crate::input::read_bytes(path, crate::input::HISTORY_LIMIT).map_err(
            |error| match error {
                crate::input::InputError::Read(crate::input::FileError::Io { source, .. }) => {
                    HistoryError::Io {
                        file: name.clone(),
                        line: 1,
                        source,
                    }
                }
                refused => HistoryError::Input(refused),
            },
        )?;
        History::read_jsonl(&bytes[..], name)
    }
}
