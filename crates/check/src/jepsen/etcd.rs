//! The Jepsen etcd log: one event per line,
//! `INFO  jepsen.util - <process> <:invoke|:ok|:fail|:info> <:read|:write|:cas> <value>`.
//! Jepsen separates the fields with tabs or runs of spaces, so any run of blanks separates
//! them here (porcupine's reader matches `\s+`), trailing blanks are ignored, and lines may end
//! in CRLF.
//!
//! Reading follows `tests/data/jepsen/README.md`: a read's invoke value is `nil`; a cas
//! value is `[old new]`; `:fail :cas` completed without swapping; `:fail :read` timed out, so
//! its outcome is unknown and it ends there; `:info` leaves the operation open to the end with
//! an unknown outcome; a `:fail :write` did not happen and is dropped; any line without
//! `jepsen.util`, blanks, `-` and blanks is log chatter and is ignored, and so is an event of a
//! process that is not a client (`:nemesis`). The time of an event is its line number.

use std::collections::BTreeMap;
use std::path::Path;

use super::{ReadError, read_text, some_ops};
use crate::linearizability::Operation;
use crate::linearizability::register::{RegisterInput, RegisterOutput, Value};

/// A register operation as read from an etcd log.
pub type RegisterOp = Operation<RegisterInput, RegisterOutput>;

/// The logger's name; the event follows it after blanks, `-` and blanks.
const LOGGER: &str = "jepsen.util";

/// Reads an etcd log file; a file without a single operation is an error.
pub fn read(file: &Path) -> Result<Vec<RegisterOp>, ReadError> {
    read_from(file, &read_text(file)?)
}

/// The operations of `text`, the contents of `file` (which only names it in errors); a text
/// without a single operation is an error, as for [`read`].
pub fn read_from(file: &Path, text: &str) -> Result<Vec<RegisterOp>, ReadError> {
    some_ops(file, parse(file, text)?)
}

/// Parses the text of an etcd log; `file` only names it in errors.
pub fn parse(file: &Path, text: &str) -> Result<Vec<RegisterOp>, ReadError> {
    let mut history = History::default();
    for (index, line) in text.lines().enumerate() {
        let number = index + 1;
        let Some(rest) = event_text(line) else {
            continue;
        };
        let event =
            Event::parse(rest).map_err(|message| ReadError::bad_line(file, number, message))?;
        if let Some(event) = event {
            history
                .apply(event, number as u64)
                .map_err(|message| ReadError::bad_line(file, number, message))?;
        }
    }
    Ok(history.ops.into_iter().flatten().collect())
}

/// Whether `line` is an event of this format (of the logger [`parse`] reads, not chatter),
/// whether or not the event itself is well formed.
pub fn is_event(line: &str) -> bool {
    event_text(line).is_some()
}

/// The text of a line's event: what follows `jepsen.util`, blanks, `-` and blanks; `None` for
/// a line of another logger (log chatter).
fn event_text(line: &str) -> Option<&str> {
    // A byte scan for the logger's first letter: `str::find` builds a two-way searcher for
    // every line, a tenth of a whole `leasesim check` of the shared logs.
    let mut from = 0;
    while let Some(at) = line.as_bytes()[from..].iter().position(|&b| b == b'j') {
        let at = from + at;
        if !line[at..].starts_with(LOGGER) {
            from = at + 1;
            continue;
        }
        let after = &line[at + LOGGER.len()..];
        let dash = after.trim_start();
        if dash.len() < after.len()
            && let Some(rest) = dash.strip_prefix('-')
            && rest.starts_with(char::is_whitespace)
        {
            return Some(rest.trim());
        }
        from = at + LOGGER.len();
    }
    None
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Invoke,
    Ok,
    Fail,
    Info,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Function {
    Read,
    Write,
    Cas,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum EventValue {
    Plain(Value),
    Pair(i64, i64),
    TimedOut,
}

struct Event {
    process: u64,
    kind: Kind,
    function: Function,
    value: EventValue,
}

impl Event {
    /// Parses the part after the marker; `None` for events of a non-client process (`:nemesis`).
    fn parse(rest: &str) -> Result<Option<Event>, String> {
        if rest.starts_with(':') {
            return Ok(None);
        }
        let malformed = |why: &str| {
            format!(
                "expected `<process> <type> <f> <value>` after `jepsen.util -`, found {rest:?}{why}"
            )
        };
        let Some((process, rest)) = field(rest) else {
            return Err(malformed(""));
        };
        let Some((kind, rest)) = field(rest) else {
            return Err(malformed(""));
        };
        let Some((function, rest)) = field(rest) else {
            return Err(malformed(""));
        };
        // The value may hold blanks itself (a cas's `[old new]`): it is the rest of the line.
        let value = rest.trim();
        if value.is_empty() {
            return Err(malformed(" (no value)"));
        }
        let process = process
            .parse()
            .map_err(|_| format!("process {process:?} is not a number"))?;
        let kind = match kind {
            ":invoke" => Kind::Invoke,
            ":ok" => Kind::Ok,
            ":fail" => Kind::Fail,
            ":info" => Kind::Info,
            other => return Err(format!("unknown event type {other:?}")),
        };
        let function = match function {
            ":read" => Function::Read,
            ":write" => Function::Write,
            ":cas" => Function::Cas,
            other => return Err(format!("unknown function {other:?}")),
        };
        let value = parse_value(value)?;
        Ok(Some(Event {
            process,
            kind,
            function,
            value,
        }))
    }
}

/// The first field of `text` (leading blanks skipped) and the text after it; `None` when only
/// blanks are left.
fn field(text: &str) -> Option<(&str, &str)> {
    let text = text.trim_start();
    if text.is_empty() {
        return None;
    }
    // ASCII blanks (those `char::is_whitespace` takes: tab to CR, space) by bytes; a byte
    // past ASCII starts a char that may be a Unicode blank.
    let end = text
        .bytes()
        .position(|b| matches!(b, b'\t'..=b'\r' | b' ') || !b.is_ascii())
        .map_or(text.len(), |ascii_end| {
            text[ascii_end..]
                .find(char::is_whitespace)
                .map_or(text.len(), |at| ascii_end + at)
        });
    Some(text.split_at(end))
}

fn parse_value(text: &str) -> Result<EventValue, String> {
    let int = |t: &str| {
        t.parse::<i64>()
            .map_err(|_| format!("value {t:?} is not nil, an integer, [old new] or :timed-out"))
    };
    if text == "nil" {
        return Ok(EventValue::Plain(None));
    }
    if text == ":timed-out" {
        return Ok(EventValue::TimedOut);
    }
    if let Some(inner) = text.strip_prefix('[').and_then(|t| t.strip_suffix(']')) {
        let mut parts = inner.split_whitespace();
        return match (parts.next(), parts.next(), parts.next()) {
            (Some(old), Some(new), None) => Ok(EventValue::Pair(int(old)?, int(new)?)),
            _ => Err(format!("cas value {text:?} is not [old new]")),
        };
    }
    Ok(EventValue::Plain(Some(int(text)?)))
}

#[derive(Default)]
struct History {
    /// Operations in invocation order; `None` once dropped (a failed write).
    ops: Vec<Option<RegisterOp>>,
    /// Process → its open operation (index into `ops`) and the function it called.
    open: BTreeMap<u64, (usize, Function)>,
}

impl History {
    fn apply(&mut self, event: Event, time: u64) -> Result<(), String> {
        if event.kind == Kind::Invoke {
            return self.invoke(event, time);
        }
        let Some((index, function)) = self.open.remove(&event.process) else {
            return Err(format!(
                "process {} completes an operation it never invoked",
                event.process
            ));
        };
        if function != event.function {
            return Err(format!(
                "process {} invoked {function:?} but completes {:?}",
                event.process, event.function
            ));
        }
        let slot = &mut self.ops[index];
        let op = slot.as_mut().expect("open operations are never dropped");
        match (event.kind, function, event.value) {
            (Kind::Ok, Function::Read, EventValue::Plain(v)) => {
                complete(op, RegisterOutput::Read(v), time)
            }
            (Kind::Ok, Function::Write, _) => complete(op, RegisterOutput::Written, time),
            (Kind::Ok, Function::Cas, _) => complete(op, RegisterOutput::Cas(true), time),
            (Kind::Fail, Function::Cas, _) => complete(op, RegisterOutput::Cas(false), time),
            (Kind::Fail, Function::Read, _) => op.ret = Some(time),
            (Kind::Fail, Function::Write, _) => *slot = None,
            (Kind::Info, _, _) => {}
            (kind, function, value) => {
                return Err(format!(
                    "{kind:?} {function:?} cannot carry the value {value:?}"
                ));
            }
        }
        Ok(())
    }

    fn invoke(&mut self, event: Event, time: u64) -> Result<(), String> {
        if self.open.contains_key(&event.process) {
            return Err(format!(
                "process {} invokes while its previous operation is still open",
                event.process
            ));
        }
        let input = match (event.function, event.value) {
            (Function::Read, _) => RegisterInput::Read,
            (Function::Write, EventValue::Plain(Some(v))) => RegisterInput::Write(v),
            (Function::Cas, EventValue::Pair(old, new)) => RegisterInput::Cas { old, new },
            (function, value) => {
                return Err(format!(
                    "cannot invoke {function:?} with the value {value:?}"
                ));
            }
        };
        self.open
            .insert(event.process, (self.ops.len(), event.function));
        self.ops.push(Some(Operation {
            process: event.process,
            input,
            output: None,
            call: time,
            ret: None,
        }));
        Ok(())
    }
}

fn complete(op: &mut RegisterOp, output: RegisterOutput, time: u64) {
    op.output = Some(output);
    op.ret = Some(time);
}
