//! Reading: [`leasesim_files`]'s functions, their errors as [`InputError`]s.

use std::fs::{File, OpenOptions};
use std::path::Path;

use super::InputError;
use leasesim_files as regular_file;

/// [`regular_file::open_regular`]: opens `path` as `options` say, never blocking on a FIFO or
/// device, and refuses what is not a regular file.
///
/// # Errors
/// [`InputError::Read`] with what [`regular_file::open_regular`] refused.
pub fn open_regular(options: &mut OpenOptions, path: &Path) -> Result<File, InputError> {
    Ok(regular_file::open_regular(options, path)?)
}

/// [`regular_file::read_bytes`]: `path` as bytes, a regular file of at most `limit` bytes.
///
/// # Errors
/// [`InputError::Read`]: not a regular file, over `limit`, or unreadable.
pub fn read_bytes(path: &Path, limit: u64) -> Result<Vec<u8>, InputError> {
    Ok(regular_file::read_bytes(path, limit)?)
}

/// [`regular_file::read_optional`]: as [`read_bytes`], but a file that does not exist is
/// `None`.
///
/// # Errors
/// As [`read_bytes`], except for a missing file.
pub fn read_optional(path: &Path, limit: u64) -> Result<Option<Vec<u8>>, InputError> {
    Ok(regular_file::read_optional(path, limit)?)
}

/// [`regular_file::read_to_string`]: `path` as UTF-8 text, as [`read_bytes`] reads it.
///
/// # Errors
/// As [`read_bytes`], and an I/O error (`InvalidData`) for text that is not UTF-8.
pub fn read_to_string(path: &Path, limit: u64) -> Result<String, InputError> {
    Ok(regular_file::read_to_string(path, limit)?)
}
