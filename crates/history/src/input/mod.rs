//! The one rule for every file and folder leasesim reads but did not just write, and for
//! the output folders it writes (`docs/files.md`):
//!
//! - **regular files only, within a size cap**: [`read_bytes`], [`read_to_string`],
//!   [`read_optional`] and [`open_regular`] open without blocking (`O_NONBLOCK`) and refuse
//!   anything the opened descriptor says is not a regular file, so a FIFO cannot hang a
//!   reader and `/dev/zero` cannot exhaust memory (bad-input probe, D9; reliability probe,
//!   N3, N4);
//! - **an output folder in use is locked** (`leasesim_results::output::OutputLock`): a second `live`, `run` or
//!   `campaign` on the same `--out` is refused while the first runs (N1);
//! - **outputs are replaced whole** (`leasesim_results::output::replace`: a new name, then a rename) and a command's
//!   stale outputs are removed before it starts (`leasesim_results::output::remove_stale`), so an interrupted command
//!   never leaves another run's verdict beside its own (N7);
//! - **inputs are never overwritten by an output** (`leasesim_results::output::refuse_input_as_output`, N6).
//!
//! Scenario, run, schedule, script, history and Jepsen files, report folders and a
//! campaign's `--resume` files all go through here; the services' data files go through
//! [`leasesim_files`] itself, which reads for both.

mod read;

use std::fmt;
use std::path::PathBuf;

pub use leasesim_files::{FileError, FileKind};
pub use read::{open_regular, read_bytes, read_optional, read_to_string};

/// The cap for a document a person writes or a tool resolves: scenario, run, schedule and
/// script files (16 MiB).
pub const DOCUMENT_LIMIT: u64 = 16 * 1024 * 1024;

/// The cap for a recorded history (ours or Jepsen's): 1 GiB, far beyond a 100k-operation run.
pub const HISTORY_LIMIT: u64 = 1024 * 1024 * 1024;

/// The cap for a file of records a command reads back from a folder it wrote earlier:
/// a campaign's `campaign.json`, `results.jsonl`, `shrunk.jsonl`, `mutants.jsonl` and
/// timelines (1 GiB, some million run records).
pub const RECORDS_LIMIT: u64 = 1024 * 1024 * 1024;

/// Why an input file was not read.
#[derive(Debug)]
pub enum InputError {
    /// A file could not be opened or read, is not a regular file, or is over its cap
    /// ([`leasesim_files`]).
    Read(FileError),
    /// An output could not be written, replaced or removed, or its folder made or locked.
    Write {
        /// The file or folder.
        path: PathBuf,
        /// What the system said.
        source: std::io::Error,
    },
    /// An output folder is locked by another command writing it (`leasesim_results::output::OutputLock`).
    InUse {
        /// The output folder.
        dir: PathBuf,
    },
    /// The output folder is one of the command's inputs (`leasesim_results::output::refuse_input_as_output`).
    InputAsOutput {
        /// The output folder as given.
        out: PathBuf,
        /// The input it is.
        input: PathBuf,
    },
}

impl fmt::Display for InputError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            InputError::Read(inner) => fmt::Display::fmt(inner, f),
            InputError::Write { path, source } => {
                write!(f, "cannot write {}: {source}", path.display())
            }
            InputError::InUse { dir } => write!(
                f,
                "{} is in use by another leasesim command (a `live`, `run`, `replay` or `campaign` \
         with the same --out is still running); wait for it to end, or give this one an --out \
         of its own",
                dir.display()
            ),
            InputError::InputAsOutput { out, input } => write!(
                f,
                "--out {} is the input folder {}: writing the output there would overwrite that \
         input; give an --out of its own",
                out.display(),
                input.display()
            ),
        }
    }
}

impl std::error::Error for InputError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            InputError::Read(inner) => std::error::Error::source(inner),
            InputError::Write { source, .. } => Some(source),
            _ => None,
        }
    }
}

impl From<FileError> for InputError {
    fn from(inner: FileError) -> Self {
        InputError::Read(inner)
    }
}

impl InputError {
    /// Whether the file does not exist (a reader of an optional file skips it).
    pub fn is_not_found(&self) -> bool {
        matches!(self, InputError::Read(read) if read.is_not_found())
    }

    /// This error as an [`std::io::Error`] of the same kind ([`FileError::into_io`] for a
    /// file not read), its text without the path: for callers whose errors name the file
    /// themselves.
    pub fn into_io(self) -> std::io::Error {
        match self {
            InputError::Read(read) => read.into_io(),
            InputError::Write { source, .. } => source,
            other @ (InputError::InUse { .. } | InputError::InputAsOutput { .. }) => {
                std::io::Error::other(other.to_string())
            }
        }
    }
}
