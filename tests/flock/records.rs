//! `FlockLease`'s record in one process: a lost record never lowers the token (the
//! generation files keep the high-water mark), a damaged one stops every grant with an error
//! naming the file, and a holder whose generation lock is free (its process gone) is taken
//! over at once.

use std::path::Path;
use std::time::Duration;

use leasesim::lease::flock::SessionFiles;
use leasesim::lease::{
    FlockLease, FlockLeaseConfig, Lease, LeaseError, Owner, SessionId, SessionLease,
};
use tempfile::TempDir;

/// Long: nothing here waits for an expiry.
const TTL: Duration = Duration::from_secs(30);

fn open(dir: &Path) -> FlockLease {
    FlockLease::open(FlockLeaseConfig::new(dir, TTL)).expect("a local temporary directory")
}

/// A lease over a fresh directory, and s1's files in it: the directory lives as long as the
/// returned guard.
fn fresh() -> (TempDir, FlockLease, SessionFiles) {
    let dir = tempfile::tempdir().unwrap();
    let lease = open(dir.path());
    let files = lease.files(&session());
    (dir, lease, files)
}

/// Two leases over one fresh directory, as two processes open it: the first grants s1 to
/// `a`, and the second refuses it to `contender` as `held` naming that grant's token.
async fn held_across_instances(contender: &str) -> (TempDir, FlockLease, FlockLease, Lease) {
    let dir = tempfile::tempdir().unwrap();
    let first = open(dir.path());
    let second = open(dir.path());
    let a = granted(&first, "a").await;
    assert_eq!(
        second.acquire(&session(), &owner(contender)).await,
        held_by(Some(a.token())),
        "the first instance holds s1's generation lock"
    );
    (dir, first, second, a)
}

/// `lease`'s grant of s1 to `name`; a panic when it refuses.
async fn granted(lease: &FlockLease, name: &str) -> Lease {
    lease.acquire(&session(), &owner(name)).await.unwrap()
}

/// The refusal naming `holder_token` as s1's holder.
fn held_by(holder_token: Option<u64>) -> Result<Lease, LeaseError> {
    Err(LeaseError::Held { holder_token })
}

fn session() -> SessionId {
    SessionId::new("s1").unwrap()
}

fn owner(name: &str) -> Owner {
    Owner::new(name, 0)
}

/// The reason of an `Unavailable`, or a panic naming what came instead.
fn unavailable<T: std::fmt::Debug>(outcome: Result<T, LeaseError>) -> String {
    match outcome {
        Err(LeaseError::Unavailable { reason }) => reason,
        other => panic!("expected Unavailable, got {other:?}"),
    }
}

#[tokio::test]
async fn a_deleted_record_never_lowers_the_token() {
    let (_dir, lease, files) = fresh();
    let a = granted(&lease, "a").await;
    lease.release(&a).await.unwrap();
    let b = granted(&lease, "b").await;
    assert_eq!((a.token(), b.token()), (1, 2));
    std::fs::remove_file(&files.record).unwrap();
    assert!(
        files.generation(2).exists(),
        "the current token's gen file is kept"
    );
    assert_eq!(
        lease.acquire(&session(), &owner("c")).await,
        held_by(Some(2)),
        "b's generation lock is held: b still believes it holds"
    );
    lease.release(&b).await.unwrap();
    let c = granted(&lease, "c").await;
    assert_eq!(c.token(), 3, "above b's, from the gen files");
    lease.release(&c).await.unwrap();
    std::fs::remove_file(&files.record).unwrap();
    let d = granted(&lease, "d").await;
    assert_eq!(d.token(), 4, "released, then the record lost: still above");
}

#[tokio::test]
async fn a_rolled_back_record_never_lowers_the_token() {
    let (_dir, lease, files) = fresh();
    let first = granted(&lease, "a").await;
    lease.release(&first).await.unwrap();
    let backup = std::fs::read(&files.record).unwrap();
    for _ in 0..4 {
        let again = granted(&lease, "a").await;
        lease.release(&again).await.unwrap();
    }
    std::fs::write(&files.record, backup).unwrap();
    let b = granted(&lease, "b").await;
    assert_eq!(b.token(), 6, "the record says 1, generation 5 was issued");
}

/// Two instances with one owner name in one process stand for two processes whose pids are
/// equal (two pid namespaces on one host): only the one holding the generation lock holds.
#[tokio::test]
async fn an_equal_owner_and_pid_without_the_generation_lock_is_another_holder() {
    let (_dir, first, second, held) = held_across_instances("a").await;
    assert_eq!(held.token(), 1);
    assert!(matches!(
        second.renew(&held).await,
        Err(LeaseError::Held { .. })
    ));
    second.release(&held).await.unwrap();
    assert_eq!(
        first.renew(&held).await.unwrap().token(),
        1,
        "a no-op release"
    );
}

/// Links and special files planted in the lease directory are refused, never followed or
/// read (a FIFO would block the decision forever).
#[tokio::test]
async fn planted_links_and_fifos_are_refused_not_followed() {
    let (_dir, lease, files) = fresh();
    let outside = tempfile::tempdir().unwrap();
    let target = outside.path().join("precious");
    std::fs::write(&target, b"keep").unwrap();
    std::os::unix::fs::symlink(&target, files.record_tmp()).unwrap();
    std::os::unix::fs::symlink(outside.path().join("made"), &files.lock).unwrap();
    let err = lease.acquire(&session(), &owner("a")).await.unwrap_err();
    assert!(matches!(err, LeaseError::Unavailable { .. }), "{err:?}");
    assert!(!outside.path().join("made").exists(), "no file outside");
    std::fs::remove_file(&files.lock).unwrap();
    let a = granted(&lease, "a").await;
    assert_eq!(
        std::fs::read(&target).unwrap(),
        b"keep",
        "the link was replaced, not followed"
    );
    lease.release(&a).await.unwrap();
    std::fs::remove_file(&files.record).unwrap();
    let made = std::process::Command::new("mkfifo")
        .arg(&files.record)
        .status()
        .unwrap();
    assert!(made.success(), "mkfifo");
    let LeaseError::Unavailable { reason } =
        lease.acquire(&session(), &owner("b")).await.unwrap_err()
    else {
        panic!("a FIFO record is not a grant")
    };
    assert!(reason.contains("not a regular file"), "{reason}");
}

#[tokio::test]
async fn a_lock_wait_too_long_to_add_waits_instead_of_panicking() {
    let dir = tempfile::tempdir().unwrap();
    let mut config = FlockLeaseConfig::new(dir.path(), Duration::from_secs(30));
    config.lock_wait = Duration::MAX;
    let lease = FlockLease::open(config).unwrap();
    assert_eq!(granted(&lease, "a").await.token(), 1);
}

#[tokio::test]
async fn renew_never_recreates_a_deleted_record() {
    let (_dir, lease, files) = fresh();
    let a = granted(&lease, "a").await;
    std::fs::remove_file(&files.record).unwrap();
    assert_eq!(lease.renew(&a).await, held_by(None));
    assert!(!files.record.exists());
}

/// Writes `bytes` over the record, then checks that acquire, renew and release all fail
/// naming the record file, and that nothing was granted or rewritten meanwhile.
async fn damaged_record_stops_every_grant(bytes: &[u8]) {
    let (_dir, lease, files) = fresh();
    let a = granted(&lease, "a").await;
    std::fs::write(&files.record, bytes).unwrap();
    let record = files.record.display().to_string();
    for reason in [
        unavailable(lease.acquire(&session(), &owner("b")).await),
        unavailable(lease.acquire(&session(), &owner("a")).await),
        unavailable(lease.renew(&a).await),
        unavailable(lease.release(&a).await),
    ] {
        assert!(reason.contains(&record), "{reason}");
        assert!(
            reason.contains("high-water mark cannot be trusted"),
            "{reason}"
        );
    }
    assert_eq!(
        std::fs::read(&files.record).unwrap(),
        bytes,
        "left as found"
    );
    assert!(!files.generation(2).exists(), "no token was issued");
}

#[tokio::test]
async fn a_garbage_record_is_an_error_naming_the_file() {
    damaged_record_stops_every_grant(b"garbage\n").await;
}

#[tokio::test]
async fn an_empty_record_is_an_error_naming_the_file() {
    damaged_record_stops_every_grant(b"").await;
}

#[tokio::test]
async fn a_truncated_record_is_an_error_naming_the_file() {
    let (_dir, lease, files) = fresh();
    granted(&lease, "a").await;
    let whole = std::fs::read(&files.record).unwrap();
    drop(lease);
    damaged_record_stops_every_grant(&whole[..whole.len() / 2]).await;
}

#[tokio::test]
async fn another_sessions_record_is_an_error_naming_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let lease = open(dir.path());
    let other = SessionId::new("s2").unwrap();
    lease.acquire(&other, &owner("a")).await.unwrap();
    let foreign = std::fs::read(SessionFiles::of(dir.path(), &other).record).unwrap();
    damaged_record_stops_every_grant(&foreign).await;
}

#[tokio::test]
async fn a_removed_damaged_record_resumes_above_the_last_token() {
    let (_dir, lease, files) = fresh();
    let a = granted(&lease, "a").await;
    lease.release(&a).await.unwrap();
    std::fs::write(&files.record, b"{\"torn").unwrap();
    unavailable(lease.acquire(&session(), &owner("b")).await);
    std::fs::remove_file(&files.record).unwrap();
    let b = granted(&lease, "b").await;
    assert_eq!(b.token(), a.token() + 1);
}

/// Dropping the holding `FlockLease` unlocks its generation lock, as the holder's process
/// dying does: another authority takes over at once, long before the 30 s TTL, and cleans
/// up the dead holder's generation file.
#[tokio::test]
async fn a_holder_whose_generation_lock_is_free_is_taken_over_at_once() {
    let (_dir, first, second, a) = held_across_instances("b").await;
    drop(first);
    let b = granted(&second, "b").await;
    assert_eq!(b.token(), a.token() + 1);
    let files = second.files(&session());
    assert!(
        !files.generation(a.token()).exists(),
        "the dead holder's gen file is removed"
    );
    assert!(files.generation(b.token()).exists());
}

/// Every file a session id makes is directly inside the lease directory.
#[tokio::test]
async fn session_ids_never_escape_the_directory() {
    let parent = tempfile::tempdir().unwrap();
    let dir = parent.path().join("leases");
    std::fs::create_dir(&dir).unwrap();
    let lease = open(&dir);
    let long = "é".repeat(128);
    for id in ["../x", "a/b", "..", "/etc/passwd", "sé/ß", &long] {
        let session = SessionId::new(id).unwrap();
        let granted = lease.acquire(&session, &owner("a")).await.unwrap();
        lease.release(&granted).await.unwrap();
    }
    let outside: Vec<_> = std::fs::read_dir(parent.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(outside, ["leases"]);
    assert_eq!(
        std::fs::read_dir(&dir).unwrap().count(),
        6 * 3,
        "lock, record, gen.1 each"
    );
}
