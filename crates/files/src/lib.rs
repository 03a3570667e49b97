//! Regular files only, within a size cap: the one way leasesim opens a file it did not just
//! create, shared by the system under test (a service's data files, `storage/file.rs`) and
//! the harness (every user file, through `input/`; docs/files.md#reading).
//!
//! [`open_regular`], [`read_bytes`], [`read_optional`] and [`read_to_string`] open without
//! blocking (`O_NONBLOCK`) and refuse anything the opened descriptor says is not a regular
//! file, so a FIFO cannot hang a reader and `/dev/zero` cannot exhaust memory.

use std::fmt;
use std::fs::{File, OpenOptions};
use std::io::Read;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

/// Why a file was not opened or read.
#[derive(Debug)]
pub enum FileError {
    /// The file could not be opened or read (missing, no permission, not UTF-8…).
    Io {
        /// The file.
        path: PathBuf,
        /// What the system said.
        source: std::io::Error,
    },
    /// The path is not a regular file (a directory, FIFO, socket or device).
    NotAFile {
        /// The path.
        path: PathBuf,
        /// What it is instead.
        kind: FileKind,
    },
    /// The file is larger than the cap for its kind.
    TooLarge {
        /// The file.
        path: PathBuf,
        /// The cap, bytes.
        limit: u64,
    },
}

impl fmt::Display for FileError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FileError::Io { path, source } => write!(f, "cannot read {}: {source}", path.display()),
            FileError::NotAFile { path, kind } => write!(
                f,
                "{} is {kind}, not a regular file; give the path of a file",
                path.display()
            ),
            FileError::TooLarge { path, limit } => write!(
                f,
                "{} is larger than the {limit}-byte limit for this kind of file",
                path.display()
            ),
        }
    }
}

impl std::error::Error for FileError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            FileError::Io { source, .. } => Some(source),
            _ => None,
        }
    }
}

impl FileError {
    /// Whether the file does not exist (a reader of an optional file skips it).
    pub fn is_not_found(&self) -> bool {
        matches!(self, FileError::Io { source, .. } if source.kind() == std::io::ErrorKind::NotFound)
    }

    /// This error as an [`std::io::Error`] of the same kind (`InvalidInput` for a path that
    /// is not a regular file, `FileTooLarge` for one over its cap), its text without the path:
    /// for callers whose errors name the file themselves.
    pub fn into_io(self) -> std::io::Error {
        use std::io::{Error, ErrorKind};
        match self {
            FileError::Io { source, .. } => source,
            FileError::NotAFile { kind, .. } => Error::new(
                ErrorKind::InvalidInput,
                format!("it is {kind}, not a regular file"),
            ),
            FileError::TooLarge { limit, .. } => Error::new(
                ErrorKind::FileTooLarge,
                format!("it is larger than the {limit}-byte limit for this kind of file"),
            ),
        }
    }
}

/// What a path that is not a regular file is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FileKind {
    /// A directory.
    Directory,
    /// A FIFO (named pipe).
    Fifo,
    /// A character or block device.
    Device,
    /// A socket or anything else.
    Other,
}

impl FileKind {
    /// What `file_type` is, for one that is not a regular file (a regular file is
    /// [`FileKind::Other`] here: callers ask only about the rest).
    pub fn of(file_type: &std::fs::FileType) -> FileKind {
        use std::os::unix::fs::FileTypeExt;
        if file_type.is_dir() {
            FileKind::Directory
        } else if file_type.is_fifo() {
            FileKind::Fifo
        } else if file_type.is_char_device() || file_type.is_block_device() {
            FileKind::Device
        } else {
            FileKind::Other
        }
    }
}

impl fmt::Display for FileKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            FileKind::Directory => "a directory",
            FileKind::Fifo => "a FIFO",
            FileKind::Device => "a device",
            FileKind::Other => "a socket or special file",
        })
    }
}

/// Opens `path` as `options` say, never blocking on a FIFO or device (`O_NONBLOCK`, which
/// changes nothing for a regular file), and refuses what the opened descriptor says is not a
/// regular file (symlinks followed). The type is checked before the open too, so a FIFO
/// opened for writing with no reader (`ENXIO`) is named a FIFO rather than "no such device".
///
/// # Errors
/// [`FileError::NotAFile`] naming what the path is; [`FileError::Io`] for the open error
/// (`NotFound` included: callers that accept a missing file match on it).
pub fn open_regular(options: &mut OpenOptions, path: &Path) -> Result<File, FileError> {
    let io = |source| FileError::Io {
        path: path.to_owned(),
        source,
    };
    if let Ok(metadata) = std::fs::metadata(path) {
        refuse_non_file(path, &metadata)?;
    }
    let file = options
        .custom_flags(libc::O_NONBLOCK | libc::O_CLOEXEC)
        .open(path)
        .map_err(io)?;
    refuse_non_file(path, &file.metadata().map_err(io)?)?;
    Ok(file)
}

fn refuse_non_file(path: &Path, metadata: &std::fs::Metadata) -> Result<(), FileError> {
    if metadata.is_file() {
        return Ok(());
    }
    Err(FileError::NotAFile {
        path: path.to_owned(),
        kind: FileKind::of(&metadata.file_type()),
    })
}

/// Reads `path` as bytes: a regular file (symlinks followed) of at most `limit` bytes.
///
/// # Errors
/// [`FileError`]: not a regular file, over `limit`, or unreadable.
pub fn read_bytes(path: &Path, limit: u64) -> Result<Vec<u8>, FileError> {
    let io = |source| FileError::Io {
        path: path.to_owned(),
        source,
    };
    let file = open_regular(OpenOptions::new().read(true), path)?;
    let size = file.metadata().map_err(io)?.len();
    if size > limit {
        return Err(FileError::TooLarge {
            path: path.to_owned(),
            limit,
        });
    }
    // Sized from the metadata (`take` hides the file's size from `read_to_end`), plus the
    // byte that tells the end.
    let mut bytes = Vec::with_capacity(size.saturating_add(1) as usize);
    // One byte past the cap tells a file that grew past it since the metadata was read.
    file.take(limit.saturating_add(1))
        .read_to_end(&mut bytes)
        .map_err(io)?;
    if bytes.len() as u64 > limit {
        return Err(FileError::TooLarge {
            path: path.to_owned(),
            limit,
        });
    }
    Ok(bytes)
}

/// As [`read_bytes`], but a file that does not exist is `None`.
///
/// # Errors
/// As [`read_bytes`], except for a missing file.
pub fn read_optional(path: &Path, limit: u64) -> Result<Option<Vec<u8>>, FileError> {
    match read_bytes(path, limit) {
        Ok(bytes) => Ok(Some(bytes)),
        Err(FileError::Io { source, .. }) if source.kind() == std::io::ErrorKind::NotFound => {
            Ok(None)
        }
        Err(e) => Err(e),
    }
}

/// Reads `path` as UTF-8 text, as [`read_bytes`] does.
///
/// # Errors
/// As [`read_bytes`], and [`FileError::Io`] (`InvalidData`) for text that is not UTF-8.
pub fn read_to_string(path: &Path, limit: u64) -> Result<String, FileError> {
    String::from_utf8(read_bytes(path, limit)?).map_err(|e| FileError::Io {
        path: path.to_owned(),
        source: std::io::Error::new(std::io::ErrorKind::InvalidData, e.utf8_error()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A cap far above what these tests write.
    const LIMIT: u64 = 1024;

    /// A file `a.json` holding `contents` in a fresh temporary directory (keep it alive).
    fn file_with(contents: impl AsRef<[u8]>) -> (tempfile::TempDir, PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a.json");
        std::fs::write(&path, contents).unwrap();
        (dir, path)
    }

    /// Makes a FIFO at `path`.
    fn mkfifo(path: &Path) {
        let status = std::process::Command::new("mkfifo")
            .arg(path)
            .status()
            .unwrap();
        assert!(status.success());
    }

    /// Asserts that `error` refused a file of kind `kind`.
    fn assert_not_a_file(error: &FileError, kind: FileKind) {
        assert!(
            matches!(error, FileError::NotAFile { kind: k, .. } if *k == kind),
            "{error}"
        );
    }

    #[test]
    fn a_regular_file_within_the_cap_is_read() {
        let (_dir, path) = file_with("{}");
        assert_eq!(read_to_string(&path, 2).unwrap(), "{}");
    }

    #[test]
    fn a_file_over_the_cap_is_refused() {
        let (_dir, path) = file_with("{ }");
        let error = read_to_string(&path, 2).unwrap_err();
        assert!(
            matches!(error, FileError::TooLarge { limit: 2, .. }),
            "{error}"
        );
    }

    #[test]
    fn directories_and_devices_are_refused_without_reading() {
        let dir = tempfile::tempdir().unwrap();
        let error = read_bytes(dir.path(), LIMIT).unwrap_err();
        assert_eq!(
            error.to_string(),
            format!(
                "{} is a directory, not a regular file; give the path of a file",
                dir.path().display()
            )
        );
        let error = read_bytes(Path::new("/dev/zero"), LIMIT).unwrap_err();
        assert_not_a_file(&error, FileKind::Device);
    }

    #[test]
    fn a_fifo_is_refused_instead_of_blocking() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f.json");
        mkfifo(&path);
        let error = read_to_string(&path, LIMIT).unwrap_err();
        assert_not_a_file(&error, FileKind::Fifo);
    }

    #[test]
    fn text_that_is_not_utf8_is_an_io_error() {
        let (_dir, path) = file_with([0xff, 0xfe]);
        let error = read_to_string(&path, LIMIT).unwrap_err();
        assert!(error.to_string().starts_with("cannot read "), "{error}");
    }

    #[test]
    fn a_missing_optional_file_is_none_and_a_fifo_still_an_error() {
        let dir = tempfile::tempdir().unwrap();
        assert!(
            read_optional(&dir.path().join("absent"), 10)
                .unwrap()
                .is_none()
        );
        let fifo = dir.path().join("f");
        mkfifo(&fifo);
        let mut options = std::fs::OpenOptions::new();
        options.write(true);
        let error = open_regular(&mut options, &fifo).unwrap_err();
        assert_not_a_file(&error, FileKind::Fifo);
    }
}
