//! Writing: an output folder locked while a command writes it, outputs replaced whole, stale
//! outputs removed, inputs never overwritten.

use std::fs::{File, OpenOptions, TryLockError};
use std::io::Write;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use leasesim_history::input::{FileError, InputError, open_regular};

/// The lock file [`OutputLock`] holds in an output folder; hidden, so no report lists it.
pub const LOCK_FILE: &str = ".lock";

/// The exclusive advisory lock (`flock`, `docs/files.md#output-folders`) on an output folder's
/// [`LOCK_FILE`], held while a `live`, `run`, `replay`, `campaign` or `report` writes the
/// folder: two commands on one `--out` would read each other's files (a live run merged the other run's histories into its own and
/// reported a false violation, N1). The OS drops the lock when the process ends, even by
/// `kill -9`, so a stale lock file never blocks a later command.
#[derive(Debug)]
pub struct OutputLock {
    _file: File,
}

impl OutputLock {
    /// Creates `out` (and its parents) if missing and takes its lock, without waiting.
    ///
    /// # Errors
    /// [`InputError::InUse`] when another process holds it; [`InputError::Write`] when the
    /// folder cannot be created or the lock file opened (a FIFO planted there is refused
    /// as [`FileError::NotAFile`]).
    pub fn take(out: &Path) -> Result<Self, InputError> {
        std::fs::create_dir_all(out).map_err(|source| InputError::Write {
            path: out.to_owned(),
            source,
        })?;
        Self::take_existing(out)
    }

    /// As [`OutputLock::take`], for a folder that must already exist (`report render`).
    ///
    /// # Errors
    /// As [`OutputLock::take`]; [`FileError::Io`] when `out` is missing or not a folder.
    pub fn take_existing(out: &Path) -> Result<Self, InputError> {
        let io = |path: &Path, source| InputError::Write {
            path: path.to_owned(),
            source,
        };
        let read = |source| {
            InputError::Read(FileError::Io {
                path: out.to_owned(),
                source,
            })
        };
        if !std::fs::metadata(out).map_err(read)?.is_dir() {
            return Err(read(std::io::Error::new(
                std::io::ErrorKind::NotADirectory,
                "it is not a folder; give the report folder a campaign wrote",
            )));
        }
        let path = out.join(LOCK_FILE);
        let mut options = OpenOptions::new();
        options.create(true).truncate(false).write(true);
        let file = open_regular(&mut options, &path).map_err(|e| match e {
            InputError::Read(FileError::Io { path, source }) => InputError::Write { path, source },
            other => other,
        })?;
        match file.try_lock() {
            Ok(()) => Ok(OutputLock { _file: file }),
            Err(TryLockError::WouldBlock) => Err(InputError::InUse {
                dir: out.to_owned(),
            }),
            Err(TryLockError::Error(e)) => Err(io(&path, e)),
        }
    }
}

/// Writes `bytes` as the whole of `path`: into a new hidden file beside it, then renamed over
/// it, so a reader (or an interruption) sees the old file or the new one, never a torn mix,
/// and a FIFO or symlink planted at `path` is replaced, never written through.
///
/// # Errors
/// [`InputError::Write`] naming the path.
pub fn replace(path: &Path, bytes: &[u8]) -> Result<(), InputError> {
    let io = |source| InputError::Write {
        path: path.to_owned(),
        source,
    };
    let dir = match path.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir,
        _ => Path::new("."),
    };
    let name = path
        .file_name()
        .map_or_else(|| "output".to_owned(), |n| n.to_string_lossy().into_owned());
    let mut file = tempfile::Builder::new()
        .prefix(&format!(".{name}."))
        .suffix(".tmp")
        .tempfile_in(dir)
        .map_err(io)?;
    file.write_all(bytes).map_err(io)?;
    file.persist(path).map_err(|e| io(e.error))?;
    Ok(())
}

/// Removes the files `names` from folder `out` (those absent are skipped): the outputs an
/// earlier command left, so one that stops midway never leaves them beside its own (N7).
///
/// # Errors
/// [`InputError::Write`] naming the first file that is there and cannot be removed.
pub fn remove_stale(out: &Path, names: &[&str]) -> Result<(), InputError> {
    for name in names {
        let path = out.join(name);
        match std::fs::remove_file(&path) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                return Err(InputError::Write { path, source: e });
            }
            _ => {}
        }
    }
    Ok(())
}

/// Refuses an output folder `out` that is one of `inputs` (the same directory, through any
/// symlink or spelling): writing it would overwrite an input (N6). An `out` that does not
/// exist yet is none of them.
///
/// # Errors
/// [`InputError::InputAsOutput`] naming both.
pub fn refuse_input_as_output(out: &Path, inputs: &[PathBuf]) -> Result<(), InputError> {
    let Ok(target) = std::fs::metadata(out) else {
        return Ok(());
    };
    for input in inputs {
        let same = std::fs::metadata(input)
            .is_ok_and(|m| m.dev() == target.dev() && m.ino() == target.ino());
        if same {
            return Err(InputError::InputAsOutput {
                out: out.to_owned(),
                input: input.clone(),
            });
        }
    }
    Ok(())
}
