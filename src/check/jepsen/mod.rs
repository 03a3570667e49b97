//! Readers for the Jepsen histories kept in `../shared/cases/jepsen` (porcupine's test data):
//! the etcd compare-and-set register logs ([`etcd`]) and the key-value EDN op maps ([`kv`]).
//!
//! Hand-written parsers: a malformed line is a [`ReadError`] naming the file and the line.

pub mod edn;
pub mod etcd;
pub mod kv;

use std::path::{Path, PathBuf};

/// Why a history file could not be read.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ReadError {
    /// The file could not be read at all.
    #[error("{}: cannot read: {source}", file.display())]
    Io {
        /// The file.
        file: PathBuf,
        /// The underlying error.
        source: std::io::Error,
    },
    /// A line is not in the expected format, or does not fit the history so far.
    #[error("{}:{line}: {message}", file.display())]
    BadLine {
        /// The file.
        file: PathBuf,
        /// The line number, from 1.
        line: usize,
        /// What is wrong with it.
        message: String,
    },
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

fn read_text(file: &Path) -> Result<String, ReadError> {
    std::fs::read_to_string(file).map_err(|source| ReadError::Io {
        file: file.to_path_buf(),
        source,
    })
}
