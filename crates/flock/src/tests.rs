//! `FlockLease`'s decisions in one process: opening, the pid rule (with a fake pid standing
//! for a forked child), the hook points, and the high-water mark on record loss.

use std::cell::Cell;
use std::sync::Mutex;

use super::decide::read_record;
use super::lock::{self, SessionLock, Take};
use super::record::Record;
use super::*;

thread_local! {
    /// The pid the lease under test believes it runs in (each test runs on its own thread).
    static PID: Cell<u32> = const { Cell::new(100) };
}

fn fake_pid() -> u32 {
    PID.with(Cell::get)
}

fn become_pid(pid: u32) {
    PID.with(|p| p.set(pid));
}

fn config(dir: &Path) -> FlockLeaseConfig {
    FlockLeaseConfig::new(dir, Duration::from_secs(30))
}

fn open_faking_pid(config: FlockLeaseConfig) -> FlockLease {
    let mut lease = FlockLease::open(config).unwrap();
    lease.os = Arc::new(RealOs { pid: fake_pid });
    lease
}

fn s1() -> SessionId {
    SessionId::new("s1").unwrap()
}

fn record_of(lease: &FlockLease) -> Option<Record> {
    read_record(&*lease.os, &lease.files(&s1()), &s1()).unwrap()
}

#[test]
fn open_takes_a_local_directory_and_refuses_the_rest() {
    let dir = tempfile::tempdir().unwrap();
    FlockLease::open(config(dir.path())).unwrap();
    let missing = dir.path().join("missing");
    assert!(matches!(
        FlockLease::open(config(&missing)),
        Err(FlockError::NotADirectory { path }) if path == missing
    ));
    let file = dir.path().join("file");
    std::fs::write(&file, b"").unwrap();
    assert!(matches!(
        FlockLease::open(config(&file)),
        Err(FlockError::NotADirectory { .. })
    ));
    for ttl in [Duration::ZERO, Duration::from_nanos(1)] {
        let err = FlockLease::open(FlockLeaseConfig::new(dir.path(), ttl)).unwrap_err();
        assert!(matches!(err, FlockError::BadTtl { .. }), "{ttl:?}: {err}");
    }
}

/// A forked child inherits the lease value and the open generation lock; its renew is Held
/// and its release changes nothing, so the parent keeps its hold.
#[test]
fn only_the_acquiring_process_renews_or_releases() {
    let dir = tempfile::tempdir().unwrap();
    let lease = open_faking_pid(config(dir.path()));
    let other = FlockLease::open(config(dir.path())).unwrap();
    become_pid(100);
    let a = lease.acquire_now(&s1(), &Owner::new("a", 0)).unwrap();
    become_pid(200);
    assert_eq!(
        lease.renew_now(&a),
        Err(LeaseError::Held {
            holder_token: Some(a.token())
        })
    );
    lease.release_now(&a).unwrap();
    let holder = record_of(&lease).unwrap().holder.unwrap();
    assert_eq!(holder.pid, 100, "the child's release wrote nothing");
    assert_eq!(
        other.acquire_now(&s1(), &Owner::new("b", 0)),
        Err(LeaseError::Held {
            holder_token: Some(a.token())
        }),
        "the generation lock is still held"
    );
    become_pid(100);
    let renewed = lease.renew_now(&a).unwrap();
    lease.release_now(&renewed).unwrap();
    assert_eq!(record_of(&lease).unwrap().holder, None);
    let b = other.acquire_now(&s1(), &Owner::new("b", 0)).unwrap();
    assert_eq!(b.token(), a.token() + 1);
}

#[test]
fn under_unlock_from_any_process_a_childs_release_frees_the_parents_hold() {
    let dir = tempfile::tempdir().unwrap();
    let mut planted = config(dir.path());
    planted.mutant = Some(Mutant::UnlockFromAnyProcess);
    let lease = open_faking_pid(planted);
    let other = FlockLease::open(config(dir.path())).unwrap();
    become_pid(100);
    let a = lease.acquire_now(&s1(), &Owner::new("a", 0)).unwrap();
    become_pid(200);
    lease.release_now(&a).unwrap();
    assert_eq!(record_of(&lease).unwrap().holder, None);
    other.acquire_now(&s1(), &Owner::new("b", 0)).unwrap();
}

/// The same owner in another process (the same replica name and incarnation reused) is
/// another holder: while the first process lives, it is refused.
#[test]
fn the_same_owner_in_another_process_is_refused_while_the_holder_lives() {
    let dir = tempfile::tempdir().unwrap();
    let first = open_faking_pid(config(dir.path()));
    let second = open_faking_pid(config(dir.path()));
    become_pid(100);
    let a = first.acquire_now(&s1(), &Owner::new("a", 0)).unwrap();
    become_pid(300);
    assert_eq!(
        second.acquire_now(&s1(), &Owner::new("a", 0)),
        Err(LeaseError::Held {
            holder_token: Some(a.token())
        })
    );
    become_pid(100);
    assert_eq!(
        second.acquire_now(&s1(), &Owner::new("a", 0)),
        Err(LeaseError::Held {
            holder_token: Some(a.token())
        }),
        "an equal pid without the generation lock (another pid namespace) is another holder"
    );
    let again = first.acquire_now(&s1(), &Owner::new("a", 0)).unwrap();
    assert_eq!(again.token(), a.token(), "the holder itself: kept");
}

#[test]
fn with_the_record_lost_the_next_token_is_above_every_generation_file() {
    let dir = tempfile::tempdir().unwrap();
    let lease = FlockLease::open(config(dir.path())).unwrap();
    let files = lease.files(&s1());
    for token in [3, 7] {
        std::fs::write(files.generation(token), b"").unwrap();
    }
    let granted = lease.acquire_now(&s1(), &Owner::new("a", 0)).unwrap();
    assert_eq!(granted.token(), 8);
    assert_eq!(
        lock::gen_tokens(&RealOs::default(), dir.path(), &files.stem).unwrap(),
        [8]
    );
}

/// Records every hook call.
#[derive(Debug, Default)]
struct Calls(Mutex<Vec<FlockPoint>>);

impl FlockHooks for Calls {
    fn at(&self, point: FlockPoint, session: &SessionId) {
        assert_eq!(session, &s1());
        self.0.lock().unwrap().push(point);
    }
}

impl Calls {
    fn take(&self) -> Vec<FlockPoint> {
        std::mem::take(&mut *self.0.lock().unwrap())
    }
}

#[test]
fn hooks_are_called_at_each_point_of_each_decision() {
    use FlockPoint::{LockBusy, RecordHalfWritten, RecordRead};
    let dir = tempfile::tempdir().unwrap();
    let calls = Arc::new(Calls::default());
    let mut hooked = config(dir.path());
    hooked.hooks = Some(calls.clone());
    hooked.lock_wait = Duration::from_millis(20);
    let lease = FlockLease::open(hooked).unwrap();
    let a = lease.acquire_now(&s1(), &Owner::new("a", 0)).unwrap();
    assert_eq!(calls.take(), [RecordRead, RecordHalfWritten], "acquire");
    let a = lease.renew_now(&a).unwrap();
    assert_eq!(calls.take(), [RecordRead, RecordHalfWritten], "renew");
    let refused = lease.acquire_now(&s1(), &Owner::new("b", 0));
    assert!(matches!(refused, Err(LeaseError::Held { .. })));
    assert_eq!(
        calls.take(),
        [RecordRead],
        "a refused acquire writes nothing"
    );
    let files = lease.files(&s1());
    let take = Take {
        path: &files.lock,
        wait: Duration::ZERO,
        verify_inode: true,
    };
    let os = RealOs::default();
    let busy = SessionLock::take(&os, &take, || {}).unwrap();
    let Err(LeaseError::Unavailable { reason }) = lease.renew_now(&a) else {
        panic!("renew under a held session lock")
    };
    assert!(
        reason.contains(&files.lock.display().to_string()),
        "{reason}"
    );
    assert_eq!(
        calls.take(),
        [LockBusy],
        "once per call, however long it polls"
    );
    drop(busy);
    lease.release_now(&a).unwrap();
    assert_eq!(calls.take(), [RecordRead, RecordHalfWritten], "release");
}
