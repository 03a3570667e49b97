//! The model's rules one by one (descriptions, fork, close, kill, rename), then
//! `FlockLease` on it: the fork rules the process tests show on real flock (tests/flock).

use std::time::Duration;

use leasesim_core::clock::ManualClock;
use leasesim_core::lease::{Lease, LeaseError, Owner, SessionId};
use leasesim_core::mutant::Mutant;

use super::*;
use crate::{FlockLease, FlockLeaseConfig};

fn host() -> (Host, ManualClock) {
    let clock = ManualClock::new();
    (Host::new(Arc::new(clock.clone())), clock)
}

fn path(name: &str) -> PathBuf {
    Path::new("/leases").join(name)
}

#[test]
fn a_lock_belongs_to_the_open_file_description() {
    let (host, _) = host();
    let p = host.spawn();
    let first = p.open_lock(&path("s.lock")).unwrap();
    let second = p.open_lock(&path("s.lock")).unwrap();
    assert!(first.try_lock().unwrap());
    assert!(first.try_lock().unwrap(), "again through the holder");
    assert!(!second.try_lock().unwrap(), "another open of one process");
    second.unlock().unwrap();
    assert!(host.is_locked(&path("s.lock")), "a non-holder's unlock");
    first.unlock().unwrap();
    assert!(second.try_lock().unwrap());
}

#[test]
fn a_forked_sharer_unlocks_for_everyone_and_the_last_close_releases() {
    let (host, _) = host();
    let parent = host.spawn();
    let child = parent.fork();
    let file = parent.create_new(&path("s.gen.1")).unwrap();
    assert!(file.try_lock().unwrap());
    let inherited = child.inherit(&*file).unwrap();
    assert!(inherited.try_lock().unwrap(), "the child shares the lock");
    inherited.unlock().unwrap();
    assert!(!host.is_locked(&path("s.gen.1")), "the child's unlock");
    assert!(file.try_lock().unwrap());
    drop(file);
    assert!(host.is_locked(&path("s.gen.1")), "the child's copy is open");
    drop(inherited);
    assert!(!host.is_locked(&path("s.gen.1")), "the last close");
}

#[test]
fn a_killed_process_closes_its_references() {
    let (host, _) = host();
    let parent = host.spawn();
    let child = parent.fork();
    let file = parent.create_new(&path("s.gen.1")).unwrap();
    assert!(file.try_lock().unwrap());
    let inherited = child.inherit(&*file).unwrap();
    host.kill(parent.id());
    assert!(host.is_locked(&path("s.gen.1")), "the child keeps it");
    assert!(file.unlock().is_err(), "a dead process calls nothing");
    drop(file);
    child.exit();
    assert!(!host.is_locked(&path("s.gen.1")), "both gone");
    drop(inherited);
    assert!(!host.is_alive(child.id()));
}

#[test]
fn a_rename_replaces_the_name_and_an_unlink_keeps_the_open_inode() {
    let (host, _) = host();
    let p = host.spawn();
    let record = path("s.record");
    let mut halves = Vec::new();
    p.write_replacing(&record, b"0123", &mut || {
        halves.push((host.contents(&record), host.contents(&path("s.record.tmp"))));
    })
    .unwrap();
    assert_eq!(halves, [(None, Some(b"01".to_vec()))]);
    assert_eq!(p.read(&record).unwrap(), Some(b"0123".to_vec()));
    assert_eq!(
        host.paths(),
        std::slice::from_ref(&record),
        "no temp file left"
    );
    let open = p.open_read(&record).unwrap();
    p.write_replacing(&record, b"abcd", &mut || {}).unwrap();
    assert!(!open.is_named_by(&record).unwrap(), "renamed over");
    let mut torn = None;
    p.write_in_place(&record, b"wxyz", &mut || torn = host.contents(&record))
        .unwrap();
    assert_eq!(torn, Some(b"wx".to_vec()), "in place: torn halfway");
    let lock = p.open_lock(&path("s.lock")).unwrap();
    p.unlink(&path("s.lock")).unwrap();
    assert!(!lock.is_named_by(&path("s.lock")).unwrap());
    assert!(lock.try_lock().unwrap(), "the unlinked inode still locks");
    assert_eq!(p.list(Path::new("/leases")).unwrap(), ["s.record"]);
}

fn s1() -> SessionId {
    SessionId::new("s1").unwrap()
}

fn lease_on(process: &Arc<Process>, mutant: Option<Mutant>) -> FlockLease {
    let config = FlockLeaseConfig {
        mutant,
        ..FlockLeaseConfig::new("/leases", Duration::from_secs(30))
    };
    FlockLease::on(process.clone(), config).unwrap()
}

fn held(result: Result<Lease, LeaseError>) -> Option<u64> {
    match result {
        Err(LeaseError::Held { holder_token }) => holder_token,
        other => panic!("expected held: {other:?}"),
    }
}

/// A acquires, its forked child releases the inherited lease and exits: B is refused naming
/// A's token (tests/flock/fork.rs on real processes); under `unlock-from-any-process` B wins.
fn child_release(mutant: Option<Mutant>) -> Result<u64, LeaseError> {
    let (host, _) = host();
    let (a, b) = (host.spawn(), host.spawn());
    let (lease_a, lease_b) = (lease_on(&a, mutant), lease_on(&b, mutant));
    let lease = lease_a.acquire_now(&s1(), &Owner::new("A", 0))?;
    assert_eq!(lease.token(), 1);
    let child = a.fork();
    let forked = lease_a.forked(child.clone()).unwrap();
    forked.release_now(&lease).unwrap();
    drop(forked);
    child.exit();
    lease_b
        .acquire_now(&s1(), &Owner::new("B", 0))
        .map(|l| l.token())
}

#[test]
fn a_forked_child_that_releases_and_exits_keeps_the_parents_hold() {
    let refused = child_release(None);
    assert!(
        matches!(
            refused,
            Err(LeaseError::Held {
                holder_token: Some(1)
            })
        ),
        "{refused:?}"
    );
    assert_eq!(
        child_release(Some(Mutant::UnlockFromAnyProcess)).unwrap(),
        2,
        "the planted bug: the child's release frees the parent's hold"
    );
}

#[test]
fn a_killed_holder_is_taken_over_at_once_unless_a_forked_child_lingers() {
    let (host, clock) = host();
    let (a, b) = (host.spawn(), host.spawn());
    let (lease_a, lease_b) = (lease_on(&a, None), lease_on(&b, None));
    let owner_b = Owner::new("B", 0);
    assert_eq!(
        lease_a
            .acquire_now(&s1(), &Owner::new("A", 0))
            .unwrap()
            .token(),
        1
    );
    host.kill(a.id());
    assert_eq!(lease_b.acquire_now(&s1(), &owner_b).unwrap().token(), 2);
    let c = host.spawn();
    let lease_c = lease_on(&c, None);
    let lingering = lease_b.forked(b.fork()).unwrap();
    host.kill(b.id());
    assert_eq!(
        held(lease_c.acquire_now(&s1(), &Owner::new("C", 0))),
        Some(2)
    );
    clock.advance(Duration::from_secs(30));
    assert_eq!(
        lease_c
            .acquire_now(&s1(), &Owner::new("C", 0))
            .unwrap()
            .token(),
        3,
        "at the TTL on the host's clock"
    );
    drop((lease_a, lingering));
}
