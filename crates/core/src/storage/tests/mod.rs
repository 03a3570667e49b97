//! Tests of the storage layer, by area: names, the in-memory disk, the directory, the log.

mod file;
mod log;
mod mem;
mod names;

use super::{Storage, StorageError};

/// The checksum of a frame, computed by hand from the documented format (not by the code
/// under test): CRC-32 of `len | seq | prev_crc | payload`.
fn frame_crc(seq: u64, prev_crc: u32, payload: &[u8]) -> u32 {
    let len = u32::try_from(payload.len()).unwrap();
    let fields = [
        len.to_le_bytes().as_slice(),
        &seq.to_le_bytes(),
        &prev_crc.to_le_bytes(),
        payload,
    ]
    .concat();
    crc32fast::hash(&fields)
}

/// Bytes of the frame at `seq` after a frame whose crc is `prev_crc`, built by hand from the
/// documented format, and its crc.
fn frame_after(seq: u64, prev_crc: u32, payload: &[u8]) -> (Vec<u8>, u32) {
    let len = u32::try_from(payload.len()).unwrap();
    let crc = frame_crc(seq, prev_crc, payload);
    let bytes = [
        len.to_le_bytes().as_slice(),
        &seq.to_le_bytes(),
        &prev_crc.to_le_bytes(),
        &crc.to_le_bytes(),
        payload,
    ]
    .concat();
    (bytes, crc)
}

/// The frames of a log holding `payloads` from `seq` 0, built by hand, without the file
/// header; and the crc of each.
fn frames_by_hand(payloads: &[&[u8]]) -> (Vec<Vec<u8>>, Vec<u32>) {
    let (mut frames, mut crcs) = (Vec::new(), Vec::new());
    let mut prev = 0;
    for (seq, payload) in (0u64..).zip(payloads) {
        let (frame, crc) = frame_after(seq, prev, payload);
        frames.push(frame);
        crcs.push(crc);
        prev = crc;
    }
    (frames, crcs)
}

/// The whole log file holding `payloads`, built by hand: magic, version 2, frames.
fn log_by_hand(payloads: &[&[u8]]) -> Vec<u8> {
    let header = [b"LSLG".as_slice(), &2u32.to_le_bytes()].concat();
    [header, frames_by_hand(payloads).0.concat()].concat()
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

/// Asserts that every file operation of `storage` refuses each of [`bad_names`] with
/// `InvalidName` naming it and the reason.
async fn assert_refuses_bad_names(storage: &impl Storage) {
    for (name, reason) in bad_names() {
        let expected = (name.clone(), reason.to_string());
        assert_eq!(invalid_name(storage.read(&name).await), expected);
        assert_eq!(invalid_name(storage.append(&name, b"x").await), expected);
        assert_eq!(invalid_name(storage.sync(&name).await), expected);
        assert_eq!(invalid_name(storage.truncate(&name, 0).await), expected);
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
