//! Per-process history files: each process of a live run (a replica incarnation, a service
//! boot, the orchestrator) appends its history lines to a file of its own as they happen, and
//! the orchestrator merges them at the end (`merge`).
//!
//! A line is handed to the kernel with one `write(2)` the moment it is recorded, so a process
//! killed with SIGKILL loses nothing it recorded (the page cache outlives the process); a
//! flusher thread `fdatasync`s the file every [`FLUSH_EVERY`] and on [`LineFile::close`], so a
//! machine crash loses at most that much. Reading tolerates exactly one kind of damage, the
//! one a kill can cause: a torn last line (no newline), which is dropped and reported.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

use crate::history::{HistoryError, Line};

/// How often the flusher thread syncs a [`LineFile`].
pub const FLUSH_EVERY: Duration = Duration::from_millis(100);

/// An append-only file of history lines, one JSON object per line ([`Line::to_json`]).
/// Cloning gives another handle to the same file.
#[derive(Clone, Debug)]
pub struct LineFile {
    shared: Arc<Shared>,
}

#[derive(Debug)]
struct Shared {
    path: PathBuf,
    file: Mutex<Option<File>>,
    /// Set when lines were written since the last sync; the flusher waits on it.
    dirty: Mutex<bool>,
    wake: Condvar,
}

impl LineFile {
    /// Creates `path` (it must not exist: every incarnation writes a file of its own) and
    /// starts its flusher thread.
    ///
    /// # Errors
    /// The file exists or cannot be created.
    pub fn create(path: &Path) -> std::io::Result<Self> {
        let file = OpenOptions::new()
            .append(true)
            .create_new(true)
            .open(path)
            .map_err(|e| {
                std::io::Error::new(e.kind(), format!("history file {}: {e}", path.display()))
            })?;
        let shared = Arc::new(Shared {
            path: path.to_owned(),
            file: Mutex::new(Some(file)),
            dirty: Mutex::new(false),
            wake: Condvar::new(),
        });
        let flusher = Arc::downgrade(&shared);
        // Live mode is real by design (docs/live.md): this thread never runs in a
        // simulation.
        #[allow(clippy::disallowed_methods)]
        std::thread::Builder::new()
            .name("history-flush".into())
            .spawn(move || flush_loop(flusher))?;
        Ok(LineFile { shared })
    }

    /// The file's path.
    pub fn path(&self) -> &Path {
        &self.shared.path
    }

    /// Appends `line` with one `write(2)`.
    ///
    /// # Errors
    /// The write failed, or the file was closed.
    pub fn append(&self, line: &Line) -> std::io::Result<()> {
        let mut text = line.to_json();
        text.push('\n');
        let mut file = self.shared.file.lock().unwrap_or_else(|p| p.into_inner());
        let Some(file) = file.as_mut() else {
            return Err(std::io::Error::other("history file already closed"));
        };
        file.write_all(text.as_bytes())?;
        *self.shared.dirty.lock().unwrap_or_else(|p| p.into_inner()) = true;
        self.shared.wake.notify_one();
        Ok(())
    }

    /// Syncs and closes the file; later appends fail.
    ///
    /// # Errors
    /// The sync failed.
    pub fn close(&self) -> std::io::Result<()> {
        let file = self
            .shared
            .file
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .take();
        match file {
            Some(file) => file.sync_data(),
            None => Ok(()),
        }
    }
}

fn flush_loop(shared: std::sync::Weak<Shared>) {
    loop {
        let Some(shared) = shared.upgrade() else {
            return;
        };
        let dirty = shared.dirty.lock().unwrap_or_else(|p| p.into_inner());
        let (mut dirty, _) = shared
            .wake
            .wait_timeout(dirty, FLUSH_EVERY)
            .unwrap_or_else(|p| p.into_inner());
        if !std::mem::take(&mut *dirty) {
            continue;
        }
        drop(dirty);
        let file = shared.file.lock().unwrap_or_else(|p| p.into_inner());
        match file.as_ref() {
            Some(file) => {
                let _ = file.sync_data();
            }
            None => return,
        }
        drop(file);
        drop(shared);
        #[allow(clippy::disallowed_methods)]
        std::thread::sleep(FLUSH_EVERY);
    }
}

/// What [`read_line_file`] found.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct LineFileContents {
    /// Every whole line, in file order.
    pub lines: Vec<Line>,
    /// A torn last line (its process was killed while writing it), dropped: its length in
    /// bytes.
    pub torn_tail_bytes: Option<usize>,
}

/// A per-process file that cannot be read.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum LineFileError {
    /// The file cannot be read (or is not a regular file, or is over the history cap).
    #[error("{path}: {message}")]
    Unreadable {
        /// The file.
        path: PathBuf,
        /// What went wrong.
        message: String,
    },
    /// A whole line is not a history line (named with the file and its 1-based number): the
    /// file is damaged, not merely torn.
    #[error("{0}")]
    BadLine(HistoryError),
}

/// Reads a per-process file written by [`LineFile`]: its whole lines through the history
/// reader, which names the file and line of a bad one.
///
/// # Errors
/// [`LineFileError`]: unreadable, or a whole line that does not parse (damage a kill cannot
/// cause, so it is never dropped silently).
pub fn read_line_file(path: &Path) -> Result<LineFileContents, LineFileError> {
    let bytes = crate::input::read_bytes(path, crate::input::HISTORY_LIMIT).map_err(|e| {
        LineFileError::Unreadable {
            path: path.to_owned(),
            message: e.to_string(),
        }
    })?;
    let whole = bytes
        .iter()
        .rposition(|&b| b == b'\n')
        .map_or(0, |end| end + 1);
    let lines = crate::history::read_lines(&bytes[..whole], &path.display().to_string())
        .map_err(LineFileError::BadLine)?;
    Ok(LineFileContents {
        lines,
        torn_tail_bytes: (whole < bytes.len()).then_some(bytes.len() - whole),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::history::{Phase, PhaseLine};

    fn phase(at_us: u64) -> Line {
        Line::Phase(PhaseLine {
            name: Phase::FaultsHealed,
            at_us,
        })
    }

    #[test]
    fn lines_read_back_in_order_and_a_torn_tail_is_dropped_and_reported() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("replica-1-0.jsonl");
        let file = LineFile::create(&path).unwrap();
        file.append(&phase(1)).unwrap();
        file.append(&phase(2)).unwrap();
        file.close().unwrap();
        assert!(file.append(&phase(3)).is_err(), "closed");
        OpenOptions::new()
            .append(true)
            .open(&path)
            .unwrap()
            .write_all(br#"{"v":1,"kind":"pha"#)
            .unwrap();
        let read = read_line_file(&path).unwrap();
        assert_eq!(read.lines, vec![phase(1), phase(2)]);
        assert_eq!(read.torn_tail_bytes, Some(18));
    }

    #[test]
    fn a_damaged_whole_line_is_an_error_naming_file_and_line() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("lease-0.jsonl");
        std::fs::write(&path, format!("{}\nnot json\n", phase(1).to_json())).unwrap();
        let error = read_line_file(&path).unwrap_err().to_string();
        assert!(error.contains("lease-0.jsonl:2"), "{error}");
    }

    #[test]
    fn an_incarnation_never_appends_to_another_ones_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("replica-1-0.jsonl");
        let _first = LineFile::create(&path).unwrap();
        assert!(LineFile::create(&path).is_err());
    }
}
