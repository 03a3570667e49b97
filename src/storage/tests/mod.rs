//! Tests of the storage layer, by area: names, the in-memory disk, the directory, the log.

mod file;
mod log;
mod mem;
mod names;

use super::StorageError;

/// Bytes of one frame, built by hand from the documented format (not by the code under test).
fn frame(payload: &[u8]) -> Vec<u8> {
    let len = u32::try_from(payload.len()).unwrap();
    [
        len.to_le_bytes().as_slice(),
        crc32fast::hash(payload).to_le_bytes().as_slice(),
        payload,
    ]
    .concat()
}

/// The `(name, reason)` of an `InvalidName`, or a panic naming what came instead.
fn invalid_name<T: std::fmt::Debug>(result: Result<T, StorageError>) -> (String, String) {
    match result {
        Err(StorageError::InvalidName { name, reason }) => (name, reason),
        other => panic!("expected InvalidName, got {other:?}"),
    }
}

/// The `(file, kind, message)` of an `Io` error, or a panic naming what came instead.
fn io_err<T: std::fmt::Debug>(
    result: Result<T, StorageError>,
) -> (String, std::io::ErrorKind, String) {
    match result {
        Err(StorageError::Io { file, source }) => (file, source.kind(), source.to_string()),
        other => panic!("expected Io, got {other:?}"),
    }
}

/// The names the brief requires every storage to refuse, each with its exact reason.
fn bad_names() -> Vec<(String, &'static str)> {
    vec![
        (
            "../x".to_string(),
            "the name starts with `.` (hidden files, `.` and `..`)",
        ),
        (
            "a/b".to_string(),
            "'/' at byte 1 is not allowed: only A-Z a-z 0-9 . _ - are (map external ids with \
             `storage::safe_name`)",
        ),
        (
            ".hidden".to_string(),
            "the name starts with `.` (hidden files, `.` and `..`)",
        ),
        (String::new(), "the name is empty"),
        (
            "a".repeat(129),
            "the name is 129 bytes long; the limit is 128",
        ),
    ]
}
