//! The fenced journal under loom: a stale writer against a new writer, through the real
//! `Store` and `Journal` over `MemLease` and `MemLedger`.
//!
//! The stale writer runs on a suspended host: its own monotonic clock never moves, so its
//! local validity check always passes and only the fence at the ledger can stop it
//! (docs/world.md#freezes-and-pause-points). The new writer shares the authority's clock,
//! which a clock thread moves one TTL, so it can take the session over at any point of the
//! stale writer's open-and-append sequence.
//!
//! `JournalLease` and `Journal` use tokio's `watch`, `OnceCell` and `Mutex` inside; loom
//! does not see those, and need not here: each writer's journal and lease are used by its
//! own thread only. Everything the two writers share — the lease map, the ledger, the
//! clock — is on the `sync` shim, so loom explores every interleaving of it.
//!
//! After the join, over the final ledger:
//! - **FENCE**: fence epochs strictly increase, and every event was written by the writer
//!   of the latest fence before it (after `Fence{e}` commits, nothing older commits);
//! - **LEDGER**: every acknowledged append is at its position, and every record in the
//!   ledger was acknowledged (a fenced append leaves nothing behind).

use std::sync::Arc;
use std::time::Duration;

use leasesim::clock::{Clock, Instant, ManualClock};
use leasesim::journal::{Entry, JournalError, Ledger, MemLedger, Record, Seq, Store, WriterId};
use leasesim::lease::{LeaseError, MemLease, Owner, SessionLease};
use leasesim::mutant::Mutant;
use loom::future::block_on;
use loom::thread;

use crate::support::{Sometimes, assert_killed, check, s1};

const TTL: Duration = Duration::from_secs(10);

/// How many events the stale writer tries to append after opening.
const STALE_EVENTS: u64 = 2;

/// What the models count across interleavings, to prove they reach the races they are about.
#[derive(Clone, Debug, Default)]
pub struct Reached {
    /// The fence stopped one of the stale writer's appends.
    pub fenced: Sometimes,
    /// Both writers were granted the lease at the same instant (possible only with a broken
    /// lease).
    pub two_holders: Sometimes,
}

/// What one writer did.
#[derive(Default)]
struct Writes {
    /// The expiry of the lease it was granted, on the authority's clock.
    granted_expiry: Option<Instant>,
    writer_id: Option<WriterId>,
    /// Each append's payload number and outcome.
    appends: Vec<(u64, Result<Seq, JournalError>)>,
}

/// The stale writer (suspended host) and a new writer racing on one session, with
/// `lease_mutant` in the authority and `ledger_mutant` in the ledger.
pub fn stale_writer_against_new_writer(
    lease_mutant: Option<Mutant>,
    ledger_mutant: Option<Mutant>,
    reached: Reached,
) -> impl Fn() + Send + Sync + 'static {
    move || {
        let authority_clock = ManualClock::new();
        let authority: Arc<dyn SessionLease> = Arc::new(
            MemLease::new(Arc::new(authority_clock.clone()), TTL).with_mutant(lease_mutant),
        );
        let ledger: Arc<dyn Ledger> = Arc::new(MemLedger::new().with_mutant(ledger_mutant));
        let suspended: Arc<dyn Clock> = Arc::new(ManualClock::new());
        let stale = Store::new(
            Owner::new("replica-1", 0),
            authority.clone(),
            ledger.clone(),
            suspended,
        );
        let fresh = Store::new(
            Owner::new("replica-2", 0),
            authority,
            ledger.clone(),
            Arc::new(authority_clock.clone()),
        );
        let stale = thread::spawn(move || write(&stale, STALE_EVENTS));
        let fresh = thread::spawn(move || write(&fresh, 1));
        let ticker = thread::spawn(move || authority_clock.advance(TTL));
        let stale = stale.join().expect("the stale writer panicked");
        let fresh = fresh.join().expect("the new writer panicked");
        ticker.join().expect("the clock thread panicked");
        let entries = block_on(ledger.read(&s1(), 1)).expect("MemLedger reads cannot fail");
        judge_fences(&entries);
        judge_acknowledgements(&entries, &[&stale, &fresh]);
        let stopped = |(_, outcome): &(u64, Result<Seq, JournalError>)| {
            matches!(outcome, Err(JournalError::Fenced { .. }))
        };
        if stale.appends.iter().any(stopped) {
            reached.fenced.saw();
        }
        if stale.granted_expiry.is_some() && stale.granted_expiry == fresh.granted_expiry {
            reached.two_holders.saw();
        }
    }
}

/// Acquires s1, opens its journal and appends `events` events; stops at the first refusal.
fn write(store: &Store, events: u64) -> Writes {
    let lease = match block_on(store.acquire_lease(&s1())) {
        Ok(lease) => lease,
        Err(LeaseError::Held { .. }) => return Writes::default(),
        Err(other) => panic!("MemLease acquire failed unexpectedly: {other}"),
    };
    let granted = Writes {
        granted_expiry: Some(lease.lease().expiry()),
        ..Writes::default()
    };
    let journal = match block_on(store.open_journal(&lease)) {
        Ok(journal) => journal,
        // A newer fence is already in, or the lease was granted too late to be valid on the
        // writer's own clock (its request was sent before the clock moved): nothing is
        // written.
        Err(JournalError::StaleEpoch { .. } | JournalError::LeaseLost { .. }) => return granted,
        Err(other) => panic!("opening failed unexpectedly: {other}"),
    };
    let mut writes = Writes {
        writer_id: Some(journal.writer_id().clone()),
        ..granted
    };
    for n in 1..=events {
        let outcome = block_on(journal.append(payload(n)));
        let refused = outcome.is_err();
        writes.appends.push((n, outcome));
        if refused {
            break;
        }
    }
    writes
}

fn payload(n: u64) -> Vec<u8> {
    n.to_be_bytes().to_vec()
}

/// FENCE: epochs rise, and only the latest fencer's events follow a fence.
fn judge_fences(entries: &[Entry]) {
    let mut latest: Option<(u64, &WriterId)> = None;
    for entry in entries {
        match &entry.record {
            Record::Fence {
                epoch, writer_id, ..
            } => {
                if let Some((previous, _)) = latest {
                    assert!(
                        *epoch > previous,
                        "FENCE: fence {epoch} at {} follows fence {previous}: epochs must rise",
                        entry.seq
                    );
                }
                latest = Some((*epoch, writer_id));
            }
            Record::Event { writer_id, .. } => {
                let fencer = latest.map(|(_, fencer)| fencer);
                assert!(
                    fencer == Some(writer_id),
                    "FENCE: {writer_id}'s event committed at {} after {:?}'s fence: a stale \
                     writer wrote past a newer fence",
                    entry.seq,
                    fencer
                );
            }
        }
    }
}

/// LEDGER: acknowledged appends are where they were acknowledged; nothing unacknowledged is
/// in the ledger.
fn judge_acknowledgements(entries: &[Entry], writers: &[&Writes]) {
    let mut acknowledged = 0;
    for writes in writers {
        let Some(writer_id) = &writes.writer_id else {
            continue;
        };
        for (n, outcome) in &writes.appends {
            let Ok(seq) = outcome else { continue };
            acknowledged += 1;
            let expected = Record::Event {
                writer_id: writer_id.clone(),
                seq_in_writer: *n,
                payload: payload(*n),
            };
            let committed = entries.get(*seq as usize - 1).map(|e| &e.record);
            assert!(
                committed == Some(&expected),
                "LEDGER: {writer_id}'s event {n} was acknowledged at {seq} but the ledger \
                 has {committed:?} there"
            );
        }
    }
    let events = entries
        .iter()
        .filter(|e| matches!(e.record, Record::Event { .. }))
        .count();
    assert!(
        events == acknowledged,
        "LEDGER: the ledger holds {events} events but {acknowledged} appends were \
         acknowledged: a refused append left a record behind"
    );
}

#[test]
fn a_suspended_stale_writer_is_fenced_out_by_the_new_writer() {
    let reached = Reached::default();
    check(stale_writer_against_new_writer(None, None, reached.clone()));
    reached
        .fenced
        .assert_reached("a stale append stopped by the fence");
}

#[test]
fn the_fence_keeps_one_writer_even_when_the_lease_grants_two_holders() {
    // With the check-then-act lease mutant both writers can hold the lease at once; the
    // ledger's fence still lets only the newer epoch write.
    let reached = Reached::default();
    let lease_bug = Some(Mutant::AcquireCheckThenAct);
    check(stale_writer_against_new_writer(
        lease_bug,
        None,
        reached.clone(),
    ));
    reached
        .two_holders
        .assert_reached("two writers holding the lease at once");
    reached
        .fenced
        .assert_reached("a stale append stopped by the fence");
}

#[test]
fn an_append_ignoring_the_expected_tip_is_killed_by_a_stale_event_after_a_newer_fence() {
    let ledger_bug = Some(Mutant::AppendIgnoresExpectedTip);
    let model = stale_writer_against_new_writer(None, ledger_bug, Reached::default());
    assert_killed("FENCE", model);
}
