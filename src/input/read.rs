//! Reading: regular files only, opened without blocking, within a size cap.

use std::fs::{File, OpenOptions};
use std::io::Read;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

use super::{FileKind, InputError};

/// Opens `path` as `options` say, never blocking on a FIFO or device (`O_NONBLOCK`, which
/// changes nothing for a regular file), and refuses what the opened descriptor says is not a
/// regular file (symlinks followed). The type is checked before the open too, so a FIFO
/// opened for writing with no reader (`ENXIO`) is named a FIFO rather than "no such device".
///
/// # Errors
/// [`InputError::NotAFile`] naming what the path is; [`InputError::Io`] for the open error
/// (`NotFound` included: callers that accept a missing file match on it).
pub fn open_regular(options: &mut OpenOptions, path: &Path) -> Result<File, InputError> {
    let io = |source| InputError::Io {
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

fn refuse_non_file(path: &Path, metadata: &std::fs::Metadata) -> Result<(), InputError> {
    if metadata.is_file() {
        return Ok(());
    }
    Err(InputError::NotAFile {
        path: path.to_owned(),
        kind: FileKind::of(&metadata.file_type()),
    })
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
    let file = open_regular(OpenOptions::new().read(true), path)?;
    let size = file.metadata().map_err(io)?.len();
    if size > limit {
        return Err(InputError::TooLarge {
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
        return Err(InputError::TooLarge {
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
pub fn read_optional(path: &Path, limit: u64) -> Result<Option<Vec<u8>>, InputError> {
    match read_bytes(path, limit) {
        Ok(bytes) => Ok(Some(bytes)),
        Err(InputError::Io { source, .. }) if source.kind() == std::io::ErrorKind::NotFound => {
            Ok(None)
        }
        Err(e) => Err(e),
    }
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
