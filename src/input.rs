//! Reading the files a user hands leasesim — scenario, run, schedule, script, history and
//! Jepsen files. Each is refused unless it is a regular file within a size cap, so a FIFO
//! cannot hang a reader and `/dev/zero` cannot exhaust memory (bad-input probe, D9). Every
//! reader of user input goes through here.

use std::fmt;
use std::io::Read;
use std::path::{Path, PathBuf};

/// The cap for a document a person writes or a tool resolves: scenario, run, schedule and
/// script files (16 MiB).
pub const DOCUMENT_LIMIT: u64 = 16 * 1024 * 1024;

/// The cap for a recorded history (ours or Jepsen's): 1 GiB, far beyond a 100k-operation run.
pub const HISTORY_LIMIT: u64 = 1024 * 1024 * 1024;

/// Why an input file was not read.
#[derive(Debug, thiserror::Error)]
pub enum InputError {
    /// The file could not be opened or read (missing, no permission, not UTF-8…).
    #[error("cannot read {}: {source}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// What the system said.
        source: std::io::Error,
    },
    /// The path is not a regular file (a directory, FIFO, socket or device).
    #[error("{} is {kind}, not a regular file; give the path of a file", path.display())]
    NotAFile {
        /// The path.
        path: PathBuf,
        /// What it is instead.
        kind: FileKind,
    },
    /// The file is larger than the cap for its kind.
    #[error("{} is larger than the {limit}-byte limit for this kind of file", path.display())]
    TooLarge {
        /// The file.
        path: PathBuf,
        /// The cap, bytes.
        limit: u64,
    },
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

/// Reads `path` as bytes: a regular file (symlinks followed) of at most `limit` bytes.
///
/// # Errors
/// [`InputError`]: not a regular file, over `limit`, or unreadable.
pub fn read_bytes(path: &Path, limit: u64) -> Result<Vec<u8>, InputError> {
    let io = |source| InputError::Io {
        path: path.to_owned(),
        source,
    };
    let metadata = std::fs::metadata(path).map_err(io)?;
    if !metadata.is_file() {
        return Err(InputError::NotAFile {
            path: path.to_owned(),
            kind: kind_of(&metadata.file_type()),
        });
    }
    let file = std::fs::File::open(path).map_err(io)?;
    // Sized from the metadata (`take` hides the file's size from `read_to_end`), plus the
    // byte that tells the end.
    let mut bytes = Vec::with_capacity(metadata.len().min(limit).saturating_add(1) as usize);
    // One byte past the cap tells a file that grew past it since the metadata was read.
    file.take(limit.saturating_add(1))
        .read_to_end(&mut bytes)
        .map_err(io)?;
    if bytes.len() as u64 > limit {
        return Err(InputError::TooLarge {
            path: path.to_owned(),
            limit,
        });
    }
    Ok(bytes)
}

/// Reads `path` as UTF-8 text, as [`read_bytes`] does.
///
/// # Errors
/// As [`read_bytes`], and [`InputError::Io`] (`InvalidData`) for text that is not UTF-8.
pub fn read_to_string(path: &Path, limit: u64) -> Result<String, InputError> {
    String::from_utf8(read_bytes(path, limit)?).map_err(|e| InputError::Io {
        path: path.to_owned(),
        source: std::io::Error::new(std::io::ErrorKind::InvalidData, e.utf8_error()),
    })
}

fn kind_of(file_type: &std::fs::FileType) -> FileKind {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_regular_file_within_the_cap_is_read() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a.json");
        std::fs::write(&path, "{}").unwrap();
        assert_eq!(read_to_string(&path, 2).unwrap(), "{}");
    }

    #[test]
    fn a_file_over_the_cap_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a.json");
        std::fs::write(&path, "{ }").unwrap();
        let error = read_to_string(&path, 2).unwrap_err();
        assert!(
            matches!(error, InputError::TooLarge { limit: 2, .. }),
            "{error}"
        );
    }

    #[test]
    fn directories_and_devices_are_refused_without_reading() {
        let dir = tempfile::tempdir().unwrap();
        let error = read_bytes(dir.path(), DOCUMENT_LIMIT).unwrap_err();
        assert_eq!(
            error.to_string(),
            format!(
                "{} is a directory, not a regular file; give the path of a file",
                dir.path().display()
            )
        );
        let error = read_bytes(Path::new("/dev/zero"), DOCUMENT_LIMIT).unwrap_err();
        assert!(
            matches!(
                error,
                InputError::NotAFile {
                    kind: FileKind::Device,
                    ..
                }
            ),
            "{error}"
        );
    }

    #[test]
    fn a_fifo_is_refused_instead_of_blocking() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f.json");
        let status = std::process::Command::new("mkfifo")
            .arg(&path)
            .status()
            .unwrap();
        assert!(status.success());
        let error = read_to_string(&path, DOCUMENT_LIMIT).unwrap_err();
        assert!(
            matches!(
                error,
                InputError::NotAFile {
                    kind: FileKind::Fifo,
                    ..
                }
            ),
            "{error}"
        );
    }

    #[test]
    fn text_that_is_not_utf8_is_an_io_error() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a.json");
        std::fs::write(&path, [0xff, 0xfe]).unwrap();
        let error = read_to_string(&path, DOCUMENT_LIMIT).unwrap_err();
        assert!(error.to_string().starts_with("cannot read "), "{error}");
    }
}
