//! The framed log: format, round trip, torn tails and corruption.

use super::{frame_after, frame_crc, frames_by_hand, log_by_hand};
use crate::storage::log::{Hidden, Position, find_hidden_frame};
use crate::storage::log::{MAX_FRAME_BYTES, Recovered, append_frames, recover, recover_or_create};
use crate::storage::{FileStorage, MemStorage, Storage, StorageError};

const FILE: &str = "s.log";
const HEADER: &[u8] = b"leasesim-test v1";
const SYNCED: [&[u8]; 2] = [b"first record", b"second"];
const UNSYNCED: &[u8] = b"the unsynced record";
const FRAME_HEADER: usize = crate::storage::log::FRAME_HEADER_BYTES;
const FILE_HEADER: usize = crate::storage::log::FILE_HEADER_BYTES;

/// Bytes of the frame holding `payload`.
fn flen(payload: &[u8]) -> usize {
    FRAME_HEADER + payload.len()
}

/// A disk holding the header and the `SYNCED` records, all durable.
async fn synced_log() -> MemStorage {
    let disk = MemStorage::new();
    let end = append_frames(&disk, FILE, Position::EMPTY, &[HEADER])
        .await
        .unwrap();
    append_frames(&disk, FILE, end, &SYNCED).await.unwrap();
    disk
}

/// The crc of the last frame of `synced_log`.
fn synced_crc() -> u32 {
    let payloads: Vec<&[u8]> = [HEADER].into_iter().chain(SYNCED).collect();
    *frames_by_hand(&payloads).1.last().unwrap()
}

/// The frame (seq 3) an append after `synced_log` writes for `payload`.
fn next_frame(payload: &[u8]) -> Vec<u8> {
    frame_after(3, synced_crc(), payload).0
}

fn synced_frames() -> Vec<Vec<u8>> {
    [HEADER].iter().chain(&SYNCED).map(|p| p.to_vec()).collect()
}

/// What recovery of a log holding `frames` returns, positions computed by hand.
fn recovered(frames: Vec<Vec<u8>>, truncated_bytes: u64) -> Recovered {
    let payloads: Vec<&[u8]> = frames.iter().map(Vec::as_slice).collect();
    let (bytes, crcs) = frames_by_hand(&payloads);
    let mut at = FILE_HEADER as u64;
    let positions = (1..).zip(bytes.iter().zip(crcs)).map(|(n, (frame, crc))| {
        at += frame.len() as u64;
        Position {
            frames: n,
            bytes: at,
            crc,
        }
    });
    Recovered {
        positions: positions.collect(),
        frames,
        truncated_bytes,
    }
}

/// `(file, offset, reason)` of a `Corrupt`, or a panic naming what came instead.
fn corrupt(result: Result<Recovered, StorageError>) -> (String, u64, String) {
    match result {
        Err(StorageError::Corrupt {
            file,
            offset,
            reason,
        }) => (file, offset, reason),
        other => panic!("expected Corrupt, got {other:?}"),
    }
}

#[tokio::test]
async fn frames_are_laid_out_as_documented() {
    // CRC-32 (IEEE) of len | seq | prev_crc | payload, as Python's zlib.crc32 gives.
    let disk = MemStorage::new();
    let payloads: [&[u8]; 2] = [b"abc", b"d"];
    let end = append_frames(&disk, FILE, Position::EMPTY, &payloads)
        .await
        .unwrap();
    let crc0 = frame_crc(0, 0, b"abc");
    let crc1 = frame_crc(1, crc0, b"d");
    let expected = [
        b"LSLG\x02\0\0\0".as_slice(),
        &[3, 0, 0, 0],
        &[0; 8],
        &[0; 4],
        &crc0.to_le_bytes(),
        b"abc",
        &[1, 0, 0, 0],
        &[1, 0, 0, 0, 0, 0, 0, 0],
        &crc0.to_le_bytes(),
        &crc1.to_le_bytes(),
        b"d",
    ]
    .concat();
    assert_eq!(disk.read(FILE).await.unwrap(), expected);
    let bytes = expected.len() as u64;
    assert_eq!(
        end,
        Position {
            frames: 2,
            bytes,
            crc: crc1
        }
    );
}

#[tokio::test]
async fn frames_round_trip_and_are_durable_on_return() {
    let disk = synced_log().await;
    disk.crash();
    assert_eq!(
        recover(&disk, FILE).await.unwrap(),
        recovered(synced_frames(), 0)
    );
    assert_eq!(
        disk.read(FILE).await.unwrap().len(),
        FILE_HEADER + 3 * FRAME_HEADER + HEADER.len() + 12 + 6
    );
}

#[tokio::test]
async fn a_missing_file_recovers_empty() {
    let disk = MemStorage::new();
    assert_eq!(recover(&disk, FILE).await.unwrap(), recovered(vec![], 0));
    assert!(disk.list().await.unwrap().is_empty());
}

#[tokio::test]
async fn recover_or_create_writes_the_header_once() {
    let disk = MemStorage::new();
    let first = recover_or_create(&disk, FILE, HEADER).await.unwrap();
    assert_eq!(first, recovered(vec![HEADER.to_vec()], 0));
    disk.crash();
    append_frames(&disk, FILE, first.end(), &[b"r"])
        .await
        .unwrap();
    let again = recover_or_create(&disk, FILE, b"other header")
        .await
        .unwrap();
    assert_eq!(again, recovered(vec![HEADER.to_vec(), b"r".to_vec()], 0));
}

#[tokio::test]
async fn recover_or_create_rewrites_a_torn_header() {
    let disk = MemStorage::new();
    disk.append(FILE, &log_by_hand(&[HEADER])).await.unwrap();
    for keep in [5, 13] {
        disk.crash_tearing(keep);
        let got = recover_or_create(&disk, FILE, HEADER).await.unwrap();
        assert_eq!(got, recovered(vec![HEADER.to_vec()], keep as u64));
        assert_eq!(disk.read(FILE).await.unwrap(), log_by_hand(&[HEADER]));
        disk.truncate(FILE, 0).await.unwrap();
        disk.append(FILE, &log_by_hand(&[HEADER])).await.unwrap();
    }
}

#[tokio::test]
async fn append_refuses_empty_and_oversized_payloads_and_writes_nothing() {
    let disk = synced_log().await;
    let before = disk.read(FILE).await.unwrap();
    let huge = vec![7u8; MAX_FRAME_BYTES + 1];
    for (payloads, reason) in [
        (
            vec![b"ok".as_slice(), b""],
            "a frame payload is empty; frames are never empty (a zeroed tail must not parse)"
                .to_string(),
        ),
        (
            vec![b"ok".as_slice(), &huge],
            "a frame payload is 16777217 bytes; the limit is MAX_FRAME_BYTES = 16777216"
                .to_string(),
        ),
    ] {
        let end = recover(&disk, FILE).await.unwrap().end();
        match append_frames(&disk, FILE, end, &payloads).await {
            Err(StorageError::InvalidFrame { file, reason: got }) => {
                assert_eq!((file.as_str(), got), (FILE, reason));
            }
            other => panic!("expected InvalidFrame, got {other:?}"),
        }
    }
    assert_eq!(disk.read(FILE).await.unwrap(), before);
}

#[tokio::test]
async fn a_frame_of_max_size_round_trips() {
    let disk = MemStorage::new();
    let big = vec![0xabu8; MAX_FRAME_BYTES];
    append_frames(&disk, FILE, Position::EMPTY, &[HEADER, &big])
        .await
        .unwrap();
    let got = recover(&disk, FILE).await.unwrap();
    assert_eq!(got.frames.len(), 2);
    assert!(got.frames[1] == big);
}

/// A crash tearing an unsynced frame at every byte offset loses exactly that frame.
#[tokio::test]
async fn torn_frame_at_every_offset_is_cut_and_synced_frames_survive() {
    let synced_bytes = synced_log().await.read(FILE).await.unwrap();
    let unsynced = next_frame(UNSYNCED);
    for keep in 0..unsynced.len() {
        let disk = synced_log().await;
        disk.append(FILE, &unsynced).await.unwrap();
        disk.crash_tearing(keep);
        let got = recover(&disk, FILE).await.unwrap();
        assert_eq!(
            got,
            recovered(synced_frames(), keep as u64),
            "keep = {keep}"
        );
        // The cut is durable: another crash changes nothing.
        disk.crash();
        assert_eq!(
            disk.read(FILE).await.unwrap(),
            synced_bytes,
            "keep = {keep}"
        );
    }
}

/// Tearing an append of two frames keeps the first once it is complete.
#[tokio::test]
async fn torn_two_frame_append_keeps_the_complete_frame() {
    let (one, one_crc) = frame_after(3, synced_crc(), b"one");
    let two = frame_after(4, one_crc, b"two two").0;
    for keep in 0..one.len() + two.len() {
        let disk = synced_log().await;
        disk.append(FILE, &[one.clone(), two.clone()].concat())
            .await
            .unwrap();
        disk.crash_tearing(keep);
        let mut frames = synced_frames();
        let mut cut = keep;
        if keep >= one.len() {
            frames.push(b"one".to_vec());
            cut -= one.len();
        }
        let got = recover(&disk, FILE).await.unwrap();
        assert_eq!(got, recovered(frames, cut as u64), "keep = {keep}");
    }
}

#[tokio::test]
async fn an_untorn_unsynced_frame_is_kept() {
    let disk = synced_log().await;
    disk.append(FILE, &next_frame(UNSYNCED)).await.unwrap();
    disk.crash_tearing(usize::MAX);
    let mut frames = synced_frames();
    frames.push(UNSYNCED.to_vec());
    assert_eq!(recover(&disk, FILE).await.unwrap(), recovered(frames, 0));
}

/// Writes `bytes` as the whole of `FILE` on a fresh disk, durably.
async fn disk_holding(bytes: &[u8]) -> MemStorage {
    let disk = MemStorage::new();
    disk.append(FILE, bytes).await.unwrap();
    disk.sync(FILE).await.unwrap();
    disk
}

/// Any flipped byte of a middle frame (length, checksum or payload) is corruption at its start.
#[tokio::test]
async fn flipped_byte_in_a_middle_frame_is_corrupt_at_its_offset() {
    let log = synced_log().await.read(FILE).await.unwrap();
    let start = FILE_HEADER + flen(HEADER);
    let end = start + flen(SYNCED[0]);
    for at in start..end {
        for mask in [0x01, 0x80] {
            let mut bytes = log.clone();
            bytes[at] ^= mask;
            let disk = disk_holding(&bytes).await;
            let (file, offset, _) = corrupt(recover(&disk, FILE).await);
            assert_eq!(
                (file.as_str(), offset),
                (FILE, start as u64),
                "byte {at} ^ {mask:#x}"
            );
            assert_eq!(disk.read(FILE).await.unwrap(), bytes, "left as it is");
        }
    }
}

#[tokio::test]
async fn corrupt_reason_and_display_are_exact() {
    let mut bytes = synced_log().await.read(FILE).await.unwrap();
    let start = FILE_HEADER + flen(HEADER);
    bytes[start + FRAME_HEADER] ^= 0x01;
    let disk = disk_holding(&bytes).await;
    let err = recover(&disk, FILE).await.unwrap_err();
    let header_crc = frame_crc(0, 0, HEADER);
    let crc = frame_crc(1, header_crc, b"first record");
    let bad = frame_crc(1, header_crc, b"girst record");
    let reason = format!(
        "checksum mismatch (stored {crc:#010x}, computed {bad:#010x}), and 26 more bytes follow it"
    );
    assert_eq!(
        err.to_string(),
        format!(
            "log `s.log` is corrupt at byte 44: {reason}; the frames before that offset are \
             intact. Recovery refuses to drop data that may hold acknowledged records: keep a \
             copy of the file, then restore it from a replica or backup, or cut it at byte 44 \
             by hand if losing the rest is acceptable"
        )
    );
}

/// A flipped checksum or payload byte in the last frame looks like a torn write: it is cut.
#[tokio::test]
async fn flipped_byte_in_the_last_frame_is_a_torn_tail() {
    let log = synced_log().await.read(FILE).await.unwrap();
    let last = flen(SYNCED[1]);
    let start = log.len() - last;
    for at in start + 4..log.len() {
        let mut bytes = log.clone();
        bytes[at] ^= 0x01;
        let disk = disk_holding(&bytes).await;
        let got = recover(&disk, FILE).await.unwrap();
        assert_eq!(
            got,
            recovered(synced_frames()[..2].to_vec(), last as u64),
            "byte {at}"
        );
        assert_eq!(disk.read(FILE).await.unwrap(), log[..start], "byte {at}");
    }
}

/// A last frame whose length grew past the end is torn; one whose length shrank leaves bytes
/// after a bad frame, which no torn append produces: corrupt.
#[tokio::test]
async fn damaged_length_of_the_last_frame() {
    let log = synced_log().await.read(FILE).await.unwrap();
    let start = log.len() - flen(SYNCED[1]);
    let mut longer = log.clone();
    longer[start] += 1;
    let got = recover(&disk_holding(&longer).await, FILE).await.unwrap();
    assert_eq!(got, recovered(synced_frames()[..2].to_vec(), 26));
    let mut shorter = log.clone();
    shorter[start] -= 1;
    let (_, offset, _) = corrupt(recover(&disk_holding(&shorter).await, FILE).await);
    assert_eq!(offset, start as u64);
}

#[tokio::test]
async fn a_length_above_the_cap_is_corrupt_even_at_the_end() {
    let mut bytes = synced_log().await.read(FILE).await.unwrap();
    let start = bytes.len() as u64;
    let len = u32::try_from(MAX_FRAME_BYTES + 1).unwrap();
    bytes.extend_from_slice(&len.to_le_bytes());
    let (_, offset, reason) = corrupt(recover(&disk_holding(&bytes).await, FILE).await);
    assert_eq!(offset, start);
    assert_eq!(
        reason,
        "the frame length 16777217 exceeds MAX_FRAME_BYTES = 16777216"
    );
}

/// Some file systems leave zeros where an extending write did not land: a torn tail.
#[tokio::test]
async fn a_zeroed_tail_is_torn() {
    let mut bytes = synced_log().await.read(FILE).await.unwrap();
    bytes.extend_from_slice(&[0; 64]);
    let disk = disk_holding(&bytes).await;
    let got = recover(&disk, FILE).await.unwrap();
    assert_eq!(got, recovered(synced_frames(), 64));
}

/// Garbage after a damaged frame that holds no intact frame is still not a torn append.
#[tokio::test]
async fn garbage_after_a_bad_frame_is_corrupt() {
    let mut bytes = synced_log().await.read(FILE).await.unwrap();
    let start = bytes.len() as u64;
    bytes.extend_from_slice(&[2, 0, 0, 0]);
    bytes.extend_from_slice(&[0; 16]);
    bytes.extend_from_slice(&[b'x', b'y', 0xff]);
    let (_, offset, reason) = corrupt(recover(&disk_holding(&bytes).await, FILE).await);
    assert_eq!(offset, start);
    let computed = frame_crc(0, 0, b"xy");
    assert_eq!(
        reason,
        format!(
            "checksum mismatch (stored 0x00000000, computed {computed:#010x}), and 1 more bytes \
             follow it"
        )
    );
}

#[tokio::test]
async fn file_storage_recovers_a_torn_tail_on_disk() {
    let root = tempfile::tempdir().unwrap();
    let storage = FileStorage::open(root.path()).unwrap();
    append_frames(&storage, FILE, Position::EMPTY, &[HEADER, b"r1"])
        .await
        .unwrap();
    let good = storage.read(FILE).await.unwrap();
    storage
        .append(FILE, &next_frame(UNSYNCED)[..11])
        .await
        .unwrap();
    drop(storage);
    let storage = FileStorage::open(root.path()).unwrap();
    let got = recover(&storage, FILE).await.unwrap();
    assert_eq!(got, recovered(vec![HEADER.to_vec(), b"r1".to_vec()], 11));
    assert_eq!(std::fs::read(root.path().join(FILE)).unwrap(), good);
}

/// A length field grown past the end of the file hides the frames behind it: corrupt.
#[tokio::test]
async fn a_length_hiding_intact_frames_is_corrupt() {
    let mut bytes = synced_log().await.read(FILE).await.unwrap();
    let start = FILE_HEADER + flen(HEADER);
    bytes[start + 1] ^= 0x80;
    let (_, offset, reason) = corrupt(recover(&disk_holding(&bytes).await, FILE).await);
    assert_eq!(offset, start as u64);
    assert_eq!(
        reason,
        "the frame runs past the end of the file, yet an intact frame starts at byte 76: a \
         damaged length field may be hiding acknowledged records"
    );
}

/// A torn payload crafted with a plausible length field every 4 bytes would make the search
/// for hidden frames quadratic; the budget stops it and the tail is cut.
#[tokio::test]
async fn the_hidden_frame_search_is_bounded() {
    let payload_bytes = 8 * 1024 * 1024;
    let mut torn = Vec::with_capacity(FRAME_HEADER + payload_bytes);
    torn.extend_from_slice(&(10u32 * 1024 * 1024).to_le_bytes());
    torn.extend_from_slice(&[0; 16]);
    for k in (0..payload_bytes).step_by(4) {
        let fits = u32::try_from(payload_bytes.saturating_sub(k + 20)).unwrap();
        torn.extend_from_slice(&fits.to_le_bytes());
    }
    let spent = find_hidden_frame(&torn, 1);
    // Two small candidates inside the frame header (offsets 1 and 2: 40960 and 160 bytes), then
    // seven of about 8 MiB at offsets 20..=44 fill the 64 MiB budget; the eighth does not fit.
    assert_eq!(spent, Hidden::BudgetSpent(9));
    let disk = disk_holding(&[log_by_hand(&[HEADER]), torn.clone()].concat()).await;
    let got = recover(&disk, FILE).await.unwrap();
    assert_eq!(got, recovered(vec![HEADER.to_vec()], torn.len() as u64));
}
