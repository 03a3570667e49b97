//! Readers for the Jepsen histories kept in `tests/data/jepsen` (porcupine's test data):
//! the etcd compare-and-set register logs ([`etcd`]) and the key-value EDN op maps ([`kv`]).
//!
//! Hand-written parsers: a malformed line is a [`ReadError`] naming the file and the line.

pub mod edn;
pub mod etcd;
pub mod kv;

use std::fmt;
use std::path::{Path, PathBuf};

/// Why a history file could not be read.
#[derive(Debug)]
#[non_exhaustive]
pub enum ReadError {
    /// The file could not be read at all.
    Io {
        /// The file.
        file: PathBuf,
        /// The underlying error.
        source: std::io::Error,
    },
    /// The path is not a regular file, or is over the size cap ([`leasesim_history::input::InputError`],
    /// which names it).
    Input(leasesim_history::input::InputError),
    /// The file holds no operation at all.
    NoOperations {
        /// The file.
        file: PathBuf,
    },
    /// A line is not in the expected format, or does not fit the history so far.
    BadLine {
        /// The file.
        file: PathBuf,
        /// The line number, from 1.
        line: usize,
        /// What is wrong with it.
        message: String,
    },
}

impl fmt::Display for ReadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ReadError::Io { file, source } => {
                write!(f, "{}: cannot read: {source}", file.display())
            }
            ReadError::Input(f0) => write!(f, "{f0}"),
            ReadError::NoOperations { file } => write!(
                f,
                "{}: no operations; an empty history has nothing to judge",
                file.display()
            ),
            ReadError::BadLine {
                file,
                line,
                message,
            } => write!(f, "{}:{line}: {message}", file.display()),
        }
    }
}

impl std::error::Error for ReadError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            ReadError::Io { source, .. } => Some(source),
            _ => None,
        }
    }
}

impl ReadError {
    fn bad_line(file: &Path, line: usize, message: impl Into<String>) -> Self {
        ReadError::BadLine {
            file: file.to_path_buf(),
            line,
            message: message.into(),
        }
    }
}

/// The file's text, read through [`leasesim_history::input::read_to_string`]: a regular file of at most
/// [`leasesim_history::input::HISTORY_LIMIT`] bytes, so a FIFO or `/dev/zero` is refused at once.
pub fn read_text(file: &Path) -> Result<String, ReadError> {
    leasesim_history::input::read_to_string(file, leasesim_history::input::HISTORY_LIMIT).map_err(
        |error| match error {
            leasesim_history::input::InputError::Read(leasesim_history::input::FileError::Io {
                source,
                ..
            }) => ReadError::Io {
                file: file.to_path_buf(),
                source,
            },
            refused => ReadError::Input(refused),
        },
    )
}

/// `ops`, or [`ReadError::NoOperations`] when there are none: an empty file, or one of log
/// chatter only, has nothing to judge and must not pass as linearizable.
fn some_ops<T>(file: &Path, ops: Vec<T>) -> Result<Vec<T>, ReadError> {
    if ops.is_empty() {
        return Err(ReadError::NoOperations {
            file: file.to_path_buf(),
        });
    }
    Ok(ops)
}
