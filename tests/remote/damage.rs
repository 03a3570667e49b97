//! Damage to one file of a service's data directory (probe D16): a ledger frame missing,
//! duplicated or swapped is `Corrupt` at its offset; a ledger or lease state file cut below
//! what was acknowledged (at a frame boundary, mid-frame, to its header, to 0 bytes, or
//! deleted) is refused against the checkpoint; a ledger path that is not a regular file is
//! refused; a file of the old format version is refused naming the version; a lost
//! checkpoint beside its logs is refused until the operator rebuilds it. Every refusal leaves
//! the damaged file as it is.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use leasesim::clock::ManualClock;
use leasesim::journal::{DurableLedger, LEDGER_CHECKPOINT, LEDGER_SUFFIX, Ledger};
use leasesim::lease::{DurableLease, DurableLeaseConfig, Owner, STATE_FILE, SessionLease};
use leasesim::storage::checkpoint::Checkpoint;
use leasesim::storage::log::{FILE_HEADER_BYTES, FRAME_HEADER_BYTES};
use leasesim::storage::{FileStorage, MemStorage, Storage, StorageError};
use leasesim_testkit::files_ending_in;

use crate::records::s1;
use crate::support::{acknowledged, event};

const RECORDS: u64 = 40;

/// Where each frame of a log file starts, read from the documented layout (file header, then
/// `len` at the start of each frame), and the file's length.
fn frame_starts(bytes: &[u8]) -> Vec<usize> {
    let mut starts = Vec::new();
    let mut at = FILE_HEADER_BYTES;
    while at < bytes.len() {
        starts.push(at);
        let len = u32::from_le_bytes(bytes[at..at + 4].try_into().unwrap()) as usize;
        at += FRAME_HEADER_BYTES + len;
    }
    assert_eq!(at, bytes.len(), "whole frames");
    starts
}

/// A disk holding session s1 with `RECORDS` acknowledged records, its ledger file's name and
/// bytes.
async fn ledger_disk() -> (MemStorage, String, Vec<u8>) {
    let disk = MemStorage::new();
    let file = acknowledged(&disk, RECORDS).await;
    let bytes = disk.read(&file).await.unwrap();
    assert_eq!(frame_starts(&bytes).len() as u64, RECORDS + 1);
    (disk, file, bytes)
}

/// Opens the ledger after `file` was replaced by `damaged`; returns the error and checks the
/// file was left as it is.
async fn open_damaged_ledger(disk: &MemStorage, file: &str, damaged: &[u8]) -> StorageError {
    disk.replace(file, damaged).await.unwrap();
    let err = DurableLedger::open(Arc::new(disk.clone()))
        .await
        .expect_err("a damaged ledger file must be refused");
    assert_eq!(disk.read(file).await.unwrap(), damaged, "left as it is");
    err
}

/// The offset and reason of a `Corrupt` of `file`.
fn corrupt_at(err: &StorageError, file: &str) -> (u64, String) {
    match err {
        StorageError::Corrupt {
            file: f,
            offset,
            reason,
        } if f == file => (*offset, reason.clone()),
        other => panic!("expected Corrupt of {file}, got {other:?}"),
    }
}

/// The expected and found positions of a `BehindCheckpoint` of `file`.
fn behind(err: &StorageError, file: &str, checkpoint: &str) -> (String, String) {
    match err {
        StorageError::BehindCheckpoint {
            file: f,
            checkpoint: c,
            expected,
            found,
        } if f == file && c == checkpoint => (expected.clone(), found.clone()),
        other => panic!("expected BehindCheckpoint of {file}, got {other:?}"),
    }
}

#[tokio::test]
async fn a_deleted_middle_frame_is_corrupt_at_its_offset() {
    let (disk, file, bytes) = ledger_disk().await;
    let starts = frame_starts(&bytes);
    let damaged = [&bytes[..starts[20]], &bytes[starts[21]..]].concat();
    let err = open_damaged_ledger(&disk, &file, &damaged).await;
    let (offset, reason) = corrupt_at(&err, &file);
    assert_eq!(offset, starts[20] as u64);
    assert!(
        reason.contains("holds seq 21 where seq 20 belongs"),
        "{reason}"
    );
    let message = err.to_string();
    assert!(
        message.contains(&format!("corrupt at byte {}", starts[20])),
        "{message}"
    );
}

#[tokio::test]
async fn a_duplicated_last_frame_is_corrupt_at_its_offset() {
    let (disk, file, bytes) = ledger_disk().await;
    let last = *frame_starts(&bytes).last().unwrap();
    let damaged = [&bytes[..], &bytes[last..]].concat();
    let err = open_damaged_ledger(&disk, &file, &damaged).await;
    let (offset, reason) = corrupt_at(&err, &file);
    assert_eq!(offset, bytes.len() as u64);
    assert!(
        reason.contains(&format!(
            "holds seq {RECORDS} where seq {} belongs",
            RECORDS + 1
        )),
        "{reason}"
    );
}

#[tokio::test]
async fn two_swapped_frames_are_corrupt_at_the_first() {
    let (disk, file, bytes) = ledger_disk().await;
    let starts = frame_starts(&bytes);
    let (a, b, c) = (starts[10], starts[11], starts[12]);
    let damaged = [&bytes[..a], &bytes[b..c], &bytes[a..b], &bytes[c..]].concat();
    let err = open_damaged_ledger(&disk, &file, &damaged).await;
    let (offset, reason) = corrupt_at(&err, &file);
    assert_eq!(offset, a as u64);
    assert!(
        reason.contains("holds seq 11 where seq 10 belongs"),
        "{reason}"
    );
}

#[tokio::test]
async fn a_ledger_file_cut_below_what_was_acknowledged_is_refused_naming_both_positions() {
    let (disk, file, bytes) = ledger_disk().await;
    let starts = frame_starts(&bytes);
    let acked = format!("frame seq {RECORDS} ending at byte {}", bytes.len());
    let half = starts[21];
    for (what, len, found) in [
        (
            "at a frame boundary halfway",
            half,
            format!("frame seq 20 ending at byte {half}"),
        ),
        (
            "mid-frame halfway",
            half + 5,
            format!("frame seq 20 ending at byte {half}"),
        ),
        (
            "to the header",
            starts[1],
            format!("frame seq 0 ending at byte {}", starts[1]),
        ),
        ("to 0 bytes", 0, "no frame (0 bytes)".to_string()),
    ] {
        let err = open_damaged_ledger(&disk, &file, &bytes[..len]).await;
        let (expected, got) = behind(&err, &file, LEDGER_CHECKPOINT);
        assert_eq!(
            (expected.as_str(), got.as_str()),
            (acked.as_str(), found.as_str()),
            "{what}"
        );
        let message = err.to_string();
        assert!(message.contains("Restore"), "{what}: {message}");
    }
}

/// A ledger in a fresh folder on real files holding one acknowledged record for s1, closed;
/// returns the folder and s1's ledger file in it.
async fn one_record_on_files() -> (tempfile::TempDir, PathBuf) {
    let root = tempfile::tempdir().unwrap();
    let storage = FileStorage::open(root.path()).unwrap();
    let ledger = DurableLedger::open(Arc::new(storage.clone()))
        .await
        .unwrap();
    assert_eq!(ledger.append(&s1(), 0, event(1)).await, Ok(1));
    drop((ledger, storage));
    let mut files = files_ending_in(root.path(), LEDGER_SUFFIX);
    assert_eq!(files.len(), 1, "{files:?}");
    (root, files.pop().unwrap())
}

#[tokio::test]
async fn a_deleted_ledger_file_is_refused() {
    let (root, path) = one_record_on_files().await;
    let file = leasesim::storage::safe_name("s1", LEDGER_SUFFIX);
    assert_eq!(path, root.path().join(&file));
    std::fs::remove_file(&path).unwrap();
    let storage = FileStorage::open(root.path()).unwrap();
    let err = DurableLedger::open(Arc::new(storage)).await.unwrap_err();
    let (expected, found) = behind(&err, &file, LEDGER_CHECKPOINT);
    assert!(
        expected.starts_with("frame seq 1 ending at byte"),
        "{expected}"
    );
    assert_eq!(found, "no frame (0 bytes)");
    assert!(!root.path().join(&file).exists(), "nothing recreated");
}

#[tokio::test]
async fn after_a_refusal_restoring_the_file_lets_the_ledger_start_with_every_record() {
    let (disk, file, bytes) = ledger_disk().await;
    open_damaged_ledger(&disk, &file, &bytes[..bytes.len() / 2]).await;
    disk.replace(&file, &bytes).await.unwrap();
    let ledger = DurableLedger::open(Arc::new(disk.clone())).await.unwrap();
    assert_eq!(ledger.tip(&s1()).await, Ok(RECORDS));
    assert_eq!(
        ledger.append(&s1(), RECORDS, event(RECORDS + 1)).await,
        Ok(RECORDS + 1)
    );
}

/// The checkpoint lost, with a ledger file whole or cut at a frame boundary (the probe's
/// damage: 51 acknowledged records lost with only a warning): a cut log looks whole, so the
/// ledger refuses to start, naming the checkpoint, the file and the way out, and changes
/// nothing. An operator who accepts the files as they are opens it with
/// `rebuild_checkpoint`, and the checkpoint is rebuilt from them.
#[tokio::test]
async fn a_lost_checkpoint_is_refused_until_the_operator_rebuilds_it() {
    let (disk, file, bytes) = ledger_disk().await;
    let starts = frame_starts(&bytes);
    for (what, len) in [("whole", bytes.len()), ("cut to 20 records", starts[21])] {
        disk.replace(&file, &bytes[..len]).await.unwrap();
        disk.truncate(LEDGER_CHECKPOINT, 0).await.unwrap();
        let err = DurableLedger::open(Arc::new(disk.clone()))
            .await
            .expect_err(what);
        assert!(
            matches!(&err, StorageError::CheckpointMissing { checkpoint, logs }
                if checkpoint == LEDGER_CHECKPOINT && *logs == format!("`{file}`")),
            "{what}: {err:?}"
        );
        assert!(err.to_string().contains("--rebuild-checkpoint"), "{err}");
        assert_eq!(disk.read(&file).await.unwrap(), &bytes[..len], "{what}");
    }
    let ledger = DurableLedger::open_with(Arc::new(disk.clone()), true)
        .await
        .unwrap();
    assert_eq!(ledger.tip(&s1()).await, Ok(20), "the files as they are");
    drop(ledger);
    let reopened = DurableLedger::open(Arc::new(disk.clone())).await.unwrap();
    assert_eq!(
        reopened.tip(&s1()).await,
        Ok(20),
        "the checkpoint was rebuilt"
    );
}

#[cfg(unix)]
#[tokio::test]
async fn a_ledger_file_replaced_by_a_directory_or_a_symlink_loop_is_refused() {
    for replacement in ["directory", "symlink loop"] {
        let (root, path) = one_record_on_files().await;
        std::fs::remove_file(&path).unwrap();
        match replacement {
            "directory" => std::fs::create_dir(&path).unwrap(),
            _ => std::os::unix::fs::symlink(&path, &path).unwrap(),
        }
        let storage = FileStorage::open(root.path()).unwrap();
        let err = DurableLedger::open(Arc::new(storage)).await.unwrap_err();
        let message = err.to_string();
        assert!(
            message.contains(&path.display().to_string()),
            "{replacement}: {message}"
        );
        assert!(message.contains("regular file"), "{replacement}: {message}");
    }
}

#[tokio::test]
async fn a_ledger_file_of_format_version_1_is_refused_naming_the_version() {
    let (disk, file, _) = ledger_disk().await;
    // Version 1: no file header, frames of len | crc | payload.
    let header = b"\x08\x01\x12\x06ledger";
    let v1 = [
        (header.len() as u32).to_le_bytes().as_slice(),
        &crc32fast::hash(header).to_le_bytes(),
        header,
    ]
    .concat();
    let err = open_damaged_ledger(&disk, &file, &v1).await;
    assert!(
        matches!(&err, StorageError::Version { file: f, found: 1, supported: 2 } if *f == file),
        "{err:?}"
    );
    assert!(err.to_string().contains("format version 1"), "{err}");
}

const TTL: Duration = Duration::from_millis(100);
const STATE_CHECKPOINT: &str = "lease-state-checkpoint.log";

async fn open_authority(
    disk: &MemStorage,
    clock: &ManualClock,
) -> Result<DurableLease, StorageError> {
    let (storage, clock) = (Arc::new(disk.clone()), Arc::new(clock.clone()));
    DurableLease::open(storage, clock, DurableLeaseConfig::with_ttl(TTL)).await
}

/// An authority's disk after 40 takeovers of s1 (tokens 1..=40), and the state file's bytes.
async fn lease_disk() -> (MemStorage, Vec<u8>) {
    let (disk, clock) = (MemStorage::new(), ManualClock::new());
    let authority = open_authority(&disk, &clock).await.unwrap();
    for n in 1..=40 {
        let owner = Owner::new(format!("o{n}"), 0);
        let lease = authority.acquire(&s1(), &owner).await.unwrap();
        assert_eq!(lease.token(), n);
        clock.advance(TTL);
    }
    drop(authority);
    let bytes = disk.read(STATE_FILE).await.unwrap();
    (disk, bytes)
}

#[tokio::test]
async fn a_lease_state_file_cut_below_what_was_acknowledged_is_refused_instead_of_reissuing_tokens()
{
    let (disk, bytes) = lease_disk().await;
    let starts = frame_starts(&bytes);
    let half = starts[starts.len() / 2];
    for (what, len) in [
        ("at a frame boundary halfway", half),
        ("mid-frame halfway", half + 3),
        ("to the header", starts[1]),
        ("to 0 bytes", 0),
    ] {
        disk.replace(STATE_FILE, &bytes[..len]).await.unwrap();
        let clock = ManualClock::new();
        let err = open_authority(&disk, &clock).await.expect_err(what);
        let (expected, _) = behind(&err, STATE_FILE, STATE_CHECKPOINT);
        let last = starts.len() - 1;
        assert_eq!(
            expected,
            format!("frame seq {last} ending at byte {}", bytes.len()),
            "{what}"
        );
        assert_eq!(
            disk.read(STATE_FILE).await.unwrap(),
            &bytes[..len],
            "{what}: left as it is"
        );
    }
    disk.replace(STATE_FILE, &bytes).await.unwrap();
    let clock = ManualClock::new();
    let authority = open_authority(&disk, &clock).await.unwrap();
    clock.advance(TTL);
    let next = authority.acquire(&s1(), &Owner::new("b", 0)).await.unwrap();
    assert_eq!(
        next.token(),
        41,
        "restored: tokens go on from the high-water mark"
    );
}

/// The lease state checkpoint lost with the state file cut at a frame boundary, to its
/// header or to 0 bytes: the authority refuses to start rather than reissue tokens 21..=40
/// (the probe's damage), and changes nothing; `rebuild_checkpoint` accepts the file as it is.
#[tokio::test]
async fn a_lost_lease_checkpoint_is_refused_instead_of_reissuing_tokens() {
    let (disk, bytes) = lease_disk().await;
    let starts = frame_starts(&bytes);
    for (what, len) in [
        ("cut halfway", starts[21]),
        ("to the header", starts[1]),
        ("to 0 bytes", 0),
    ] {
        disk.replace(STATE_FILE, &bytes[..len]).await.unwrap();
        disk.truncate(STATE_CHECKPOINT, 0).await.unwrap();
        let clock = ManualClock::new();
        let err = open_authority(&disk, &clock).await.expect_err(what);
        assert!(
            matches!(&err, StorageError::CheckpointMissing { checkpoint, .. }
                if checkpoint == STATE_CHECKPOINT),
            "{what}: {err:?}"
        );
        assert_eq!(
            disk.read(STATE_FILE).await.unwrap(),
            &bytes[..len],
            "{what}"
        );
    }
    let clock = ManualClock::new();
    let mut config = DurableLeaseConfig::with_ttl(TTL);
    config.rebuild_checkpoint = true;
    let accepted = DurableLease::open(Arc::new(disk.clone()), Arc::new(clock.clone()), config);
    assert!(
        accepted.await.is_ok(),
        "the operator accepted the state file as it is"
    );
}

/// A crash during a new authority's first start, after its empty checkpoint was written and
/// before its state file was, leaves a directory it starts from again (the checkpoint is
/// written first, so this is the only window).
#[tokio::test]
async fn a_crash_in_a_new_authoritys_first_start_leaves_a_directory_it_starts_from() {
    let disk = MemStorage::new();
    let mut checkpoint = Checkpoint::open(&disk, STATE_CHECKPOINT).await.unwrap();
    checkpoint
        .rewrite(&disk, std::collections::BTreeMap::new())
        .await
        .unwrap();
    let clock = ManualClock::new();
    let authority = open_authority(&disk, &clock).await.unwrap();
    clock.advance(TTL);
    let lease = authority.acquire(&s1(), &Owner::new("a", 0)).await.unwrap();
    assert_eq!(lease.token(), 1);
}
