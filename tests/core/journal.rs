//! The fenced journal against its contract (docs/contracts.md#journal and "Client-side validity"):
//! fences on open, fencing of stale and foreign writers, poisoning, ambiguous outcomes resolved
//! by reading back, local validity, stale epochs and fence retries.
//!
//! Every test runs on a [`ManualClock`] with a 10 s TTL and the default 10% skew margin, so a
//! lease acquired at time 0 is valid locally until exactly 9 s.
//!
//! Every test runs once per ledger [`Backend`] (see [`journal_contract!`]): `mem::<test>`
//! with the journal calling a [`MemLedger`] in process, and `grpc::<test>` with the journal
//! calling a [`RemoteLedger`](leasesim::journal::RemoteLedger) that talks, over loopback TCP,
//! to a [`LedgerServer`](leasesim::journal::LedgerServer) in front of that `MemLedger`. The
//! assertions are the same for both: the contract does not depend on where the ledger is.

use std::error::Error as _;
use std::sync::Arc;
use std::time::Duration;

use leasesim::clock::{Clock, Instant, ManualClock};
use leasesim::journal::{
    Entry, Journal, JournalError, JournalLease, Ledger, LedgerError, LossCause, MemLedger, Record,
    Seq, Store, StoreConfig,
};
use leasesim::lease::{LeaseError, MemLease, Owner};

use crate::records::{assert_stale_writer_fenced, event, fence, replica_1, replica_2, s1, writer};
use crate::support::ledger::{
    AppendFault, FaultyLedger, LoopbackLedger, RacingLedger, Sneak, TIMEOUT, append_foreign,
    foreign_event, foreign_fence,
};

/// Expands each listed test, an `async fn(Backend)` below, into one `#[tokio::test]` per
/// backend: `mem::<test>` and `grpc::<test>`. A test may name the runtime it needs in
/// parentheses (the arguments of `#[tokio::test(...)]`). A test left out of the list is dead
/// code, which the lints refuse.
macro_rules! journal_contract {
    ($($test:ident $(($($runtime:tt)*))?),* $(,)?) => {
        /// The contract with the journal calling the `MemLedger` in process.
        mod mem {
            journal_contract!(@backend Mem; $($test $(($($runtime)*))?),*);
        }
        /// The same contract with the journal calling the `MemLedger` over gRPC on loopback.
        mod grpc {
            journal_contract!(@backend Grpc; $($test $(($($runtime)*))?),*);
        }
    };
    (@backend $backend:ident; $($test:ident $(($($runtime:tt)*))?),*) => {
        $(
            #[tokio::test $(($($runtime)*))?]
            async fn $test() {
                super::$test(super::Backend::$backend).await;
            }
        )*
    };
}

journal_contract! {
    open_appends_a_fence_at_tip_plus_one_and_replay_skips_fences,
    each_journal_a_store_opens_has_its_own_writer_id,
    stale_writer_after_takeover_is_fenced_and_poisoned,
    foreign_append_fences_the_journal,
    concurrent_appends_land_on_consecutive_sequence_numbers(
        flavor = "multi_thread",
        worker_threads = 4
    ),
    append_at_the_local_deadline_is_refused_with_lease_lost,
    append_after_release_is_refused_with_lease_lost,
    renew_moves_the_deadline_to_send_time_plus_ttl_minus_margin,
    append_after_being_overtaken_is_refused_with_the_new_holders_token,
    unknown_outcome_that_committed_is_resolved_by_reading_back,
    conflict_with_our_own_committed_record_is_a_success,
    unknown_outcome_not_visible_on_read_back_is_ambiguous_and_poisons,
    unknown_outcome_with_a_failed_read_back_is_ambiguous_and_poisons,
    unknown_outcome_with_a_foreign_record_on_read_back_is_fenced,
    unavailable_ledger_leaves_the_journal_usable,
    open_resolves_an_unknown_fence_by_reading_back,
    open_retries_when_read_back_finds_a_foreign_record_instead_of_the_fence,
    open_with_an_unresolvable_fence_is_ambiguous,
    open_refuses_a_lease_epoch_below_the_highest_fence,
    open_refuses_a_lease_epoch_equal_to_the_highest_fence,
    open_retries_the_fence_after_losing_the_race_to_the_tip,
    open_gives_up_with_fence_contention_when_every_attempt_conflicts,
    open_refuses_when_a_higher_fence_wins_the_race,
    open_stops_retrying_the_fence_once_the_lease_is_lost,
}

/// Where the ledger the journals write through lives.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Backend {
    /// In process: the journals call the [`MemLedger`] itself.
    Mem,
    /// Behind the ledger service: the journals call a `RemoteLedger`, which talks gRPC over
    /// loopback TCP to a `LedgerServer` in front of the `MemLedger`.
    Grpc,
}

const TTL: Duration = Duration::from_secs(10);
/// Local validity of a lease sent at time 0: TTL − 10% of the TTL.
const VALID_FOR: Duration = Duration::from_secs(9);

fn entries(records: impl IntoIterator<Item = (Seq, Record)>) -> Vec<Entry> {
    records
        .into_iter()
        .map(|(seq, record)| Entry { seq, record })
        .collect()
}

/// One lease authority and one ledger, both on one manual clock.
struct World {
    clock: ManualClock,
    authority: Arc<MemLease>,
    /// The ledger itself, where every committed record is: the world reads it directly to see
    /// what really committed, whatever the backend.
    committed: Arc<MemLedger>,
    /// The ledger as the journals reach it: `committed` itself ([`Backend::Mem`]) or a
    /// `RemoteLedger` client of the service in front of it ([`Backend::Grpc`]). The test
    /// doubles wrap this one, so what they commit behind the journal's back crosses the wire
    /// too.
    ledger: Arc<dyn Ledger>,
    /// How foreign writers reach the ledger: for [`Backend::Grpc`], another client of the
    /// service, on its own connection (another process), so foreign records commit through
    /// the service's own compare-and-set.
    intruder: Arc<dyn Ledger>,
    /// Keeps the ledger service of [`Backend::Grpc`] running for the world's lifetime.
    _service: Option<LoopbackLedger>,
}

impl World {
    async fn new(backend: Backend) -> Self {
        let clock = ManualClock::new();
        let authority = Arc::new(MemLease::new(Arc::new(clock.clone()), TTL));
        let committed = Arc::new(MemLedger::new());
        let (ledger, intruder, service): (Arc<dyn Ledger>, Arc<dyn Ledger>, _) = match backend {
            Backend::Mem => (committed.clone(), committed.clone(), None),
            Backend::Grpc => {
                let service = LoopbackLedger::serve(committed.clone()).await;
                let ledger = Arc::new(service.client(Arc::new(clock.clone())));
                let intruder = Arc::new(service.client(Arc::new(clock.clone())));
                (ledger, intruder, Some(service))
            }
        };
        World {
            clock,
            authority,
            committed,
            ledger,
            intruder,
            _service: service,
        }
    }

    /// A store for `owner` over the backend's ledger, timing its leases on the world's clock.
    fn store(&self, owner: Owner) -> Store {
        self.store_with(owner, self.ledger.clone(), Arc::new(self.clock.clone()))
    }

    /// A store for `owner` writing through `ledger` and judging validity on `clock`.
    fn store_with(&self, owner: Owner, ledger: Arc<dyn Ledger>, clock: Arc<dyn Clock>) -> Store {
        Store::new(owner, self.authority.clone(), ledger, clock)
    }

    /// The tip of `s1` as committed.
    async fn tip(&self) -> Seq {
        self.committed.tip(&s1()).await.unwrap()
    }

    /// Every record of `s1` as committed.
    async fn records(&self) -> Vec<Record> {
        let entries = self.committed.read(&s1(), 1).await.unwrap();
        entries.into_iter().map(|entry| entry.record).collect()
    }
}

/// Acquires `s1` through `store` and opens its journal.
async fn open(store: &Store) -> (JournalLease, Journal) {
    let lease = store.acquire_lease(&s1()).await.unwrap();
    let journal = store.open_journal(&lease).await.unwrap();
    (lease, journal)
}

fn bytes(payload: &str) -> Vec<u8> {
    payload.as_bytes().to_vec()
}

// --- Fences on open, replay ---------------------------------------------------------------

async fn open_appends_a_fence_at_tip_plus_one_and_replay_skips_fences(backend: Backend) {
    let world = World::new(backend).await;
    let a = world.store(replica_1());
    let (a_lease, a_journal) = open(&a).await;
    assert_eq!(a_lease.epoch(), 1);
    assert_eq!(a_journal.tip().await, 1, "A's fence is the first record");
    assert_eq!(a_journal.writer_id(), &writer(replica_1(), 1));
    assert_eq!(a_journal.append(bytes("a1")).await, Ok(2));
    assert_eq!(a_journal.append(bytes("a2")).await, Ok(3));
    a_lease.release().await.unwrap();

    let b = world.store(replica_2());
    let b_lease = b.acquire_lease(&s1()).await.unwrap();
    assert_eq!(b_lease.epoch(), 2, "the token advances after release");
    let b_journal = b.open_journal(&b_lease).await.unwrap();
    assert_eq!(b_journal.tip().await, 4, "B's fence lands at tip + 1 = 4");
    assert_eq!(world.tip().await, 4, "the journal is ready at the fence");
    assert_eq!(b_journal.append(bytes("b1")).await, Ok(5));

    let a1 = event(replica_1(), 1, 1, "a1");
    let a2 = event(replica_1(), 1, 2, "a2");
    let b1 = event(replica_2(), 1, 1, "b1");
    assert_eq!(
        b.replay(&s1()).await.unwrap(),
        entries([(2, a1.clone()), (3, a2.clone()), (5, b1.clone())]),
        "replay skips fences"
    );
    assert_eq!(
        b.replay_full(&s1()).await.unwrap(),
        entries([
            (1, fence(1, replica_1(), 1)),
            (2, a1),
            (3, a2),
            (4, fence(2, replica_2(), 1)),
            (5, b1),
        ]),
        "full replay shows the fences in order"
    );
}

async fn each_journal_a_store_opens_has_its_own_writer_id(backend: Backend) {
    let world = World::new(backend).await;
    let store = world.store(replica_1());
    let (lease, first) = open(&store).await;
    assert_eq!(first.append(bytes("x")).await, Ok(2));
    drop(first);
    lease.release().await.unwrap();

    let (_lease, second) = open(&store).await;
    assert_eq!(second.writer_id(), &writer(replica_1(), 2));
    assert_eq!(second.append(bytes("x")).await, Ok(4));
    assert_eq!(
        world.records().await,
        [
            fence(1, replica_1(), 1),
            event(replica_1(), 1, 1, "x"),
            fence(2, replica_1(), 2),
            event(replica_1(), 2, 1, "x"),
        ],
        "the same payload from two journals makes two distinct records"
    );
}

// --- Stale and foreign writers ------------------------------------------------------------

/// A's host is suspended for a whole TTL: its monotonic clock stops (docs/contracts.md#time), so A
/// still believes its lease valid, while the authority's clock runs on, the lease expires there
/// and B takes over with token 2. This is exactly the drift no skew margin covers, and why
/// safety must come from the ledger's fence, not from A's local check.
async fn stale_writer_after_takeover_is_fenced_and_poisoned(backend: Backend) {
    let world = World::new(backend).await;
    let a_clock = ManualClock::new();
    let a = world.store_with(replica_1(), world.ledger.clone(), Arc::new(a_clock.clone()));
    let (a_lease, a_journal) = open(&a).await;
    assert_eq!(a_lease.epoch(), 1);
    assert_eq!(a_journal.append(bytes("a1")).await, Ok(2));

    world.clock.advance(TTL); // A is suspended: a_clock does not move.
    let b = world.store(replica_2());
    let (b_lease, b_journal) = open(&b).await;
    assert_eq!(b_lease.epoch(), 2);
    assert_eq!(b_journal.tip().await, 3);
    assert_eq!(b_journal.append(bytes("b1")).await, Ok(4));

    assert!(a_lease.is_valid(), "A's local check still passes");
    assert_stale_writer_fenced(&a_journal, world.records(), &b_journal).await;
}

async fn foreign_append_fences_the_journal(backend: Backend) {
    let world = World::new(backend).await;
    let store = world.store(replica_1());
    let (_lease, journal) = open(&store).await;
    assert_eq!(journal.append(bytes("e1")).await, Ok(2));

    assert_eq!(
        append_foreign(&*world.intruder, &s1(), foreign_event(1)).await,
        3
    );
    assert_eq!(
        append_foreign(&*world.intruder, &s1(), foreign_event(2)).await,
        4
    );

    let fenced = JournalError::Fenced {
        expected: 2,
        actual: 4,
    };
    assert_eq!(journal.append(bytes("e2")).await, Err(fenced.clone()));
    assert!(fenced.poisons());
    assert!(journal.is_poisoned().await);
    assert_eq!(journal.tip().await, 2);
    assert_poisoned_by(&journal, "e3", fenced).await;
    assert_eq!(
        world.tip().await,
        4,
        "neither refused append wrote anything"
    );
    assert_eq!(
        store.replay(&s1()).await.unwrap(),
        entries([
            (2, event(replica_1(), 1, 1, "e1")),
            (3, foreign_event(1)),
            (4, foreign_event(2)),
        ])
    );
}

// --- Concurrency --------------------------------------------------------------------------

async fn concurrent_appends_land_on_consecutive_sequence_numbers(backend: Backend) {
    let world = World::new(backend).await;
    let store = world.store(replica_1());
    let (_lease, journal) = open(&store).await;
    let journal = Arc::new(journal);

    let tasks: Vec<_> = (0..32u8)
        .map(|task| {
            let journal = journal.clone();
            tokio::spawn(async move { (task, journal.append(vec![task]).await.unwrap()) })
        })
        .collect();
    let mut landed = Vec::new();
    for task in tasks {
        landed.push(task.await.unwrap());
    }

    let mut seqs: Vec<Seq> = landed.iter().map(|&(_, seq)| seq).collect();
    seqs.sort_unstable();
    assert_eq!(seqs, (2..=33).collect::<Vec<_>>(), "no gaps, no duplicates");
    assert_eq!(journal.tip().await, 33);
    assert_eq!(world.tip().await, 33);

    let replay = store.replay(&s1()).await.unwrap();
    assert_eq!(replay.len(), 32);
    for (seq_in_writer, entry) in (1..).zip(&replay) {
        let task = landed.iter().find(|&&(_, seq)| seq == entry.seq).unwrap().0;
        assert_eq!(
            entry.record,
            Record::Event {
                writer_id: writer(replica_1(), 1),
                seq_in_writer,
                payload: vec![task],
            },
            "at seq {}",
            entry.seq
        );
    }
}

// --- Client-side validity -----------------------------------------------------------------

async fn append_at_the_local_deadline_is_refused_with_lease_lost(backend: Backend) {
    let world = World::new(backend).await;
    let ledger = Arc::new(FaultyLedger::new(world.ledger.clone()));
    let store = world.store_with(replica_1(), ledger.clone(), Arc::new(world.clock.clone()));
    let (lease, journal) = open(&store).await;
    let valid_until = Instant::from_origin(VALID_FOR);
    assert_eq!(
        lease.valid_until(),
        valid_until,
        "sent at 0 + 10 s − 10% of 10 s"
    );

    world.clock.advance(VALID_FOR - Duration::from_nanos(1));
    assert_eq!(
        journal.append(bytes("last")).await,
        Ok(2),
        "valid 1 ns before"
    );
    let sent = ledger.appends();

    world.clock.advance(Duration::from_nanos(1));
    let cause = LossCause::Deadline { valid_until };
    let refused = journal.append(bytes("late")).await.unwrap_err();
    assert_eq!(
        refused,
        JournalError::LeaseLost {
            cause: cause.clone()
        }
    );
    let source = refused.source().expect("LeaseLost has a source");
    assert_eq!(source.downcast_ref::<LossCause>(), Some(&cause));
    assert!(!refused.poisons());

    assert_eq!(ledger.appends(), sent, "nothing was sent");
    assert_eq!(journal.tip().await, 2);
    assert_eq!(world.tip().await, 2);
    assert_eq!(lease.loss(), Some(cause.clone()));
    assert_eq!(
        journal.append(bytes("later")).await,
        Err(JournalError::LeaseLost {
            cause: cause.clone()
        }),
        "a lost lease stays lost"
    );
    assert_eq!(
        store.open_journal(&lease).await.err(),
        Some(JournalError::LeaseLost { cause }),
        "nor can it open a journal"
    );
    assert_eq!(ledger.appends(), sent);
    assert_eq!(world.tip().await, 2);
}

async fn append_after_release_is_refused_with_lease_lost(backend: Backend) {
    let world = World::new(backend).await;
    let store = world.store(replica_1());
    let (lease, journal) = open(&store).await;
    assert_eq!(journal.append(bytes("e1")).await, Ok(2));

    lease.release().await.unwrap();
    let refused = journal.append(bytes("e2")).await.unwrap_err();
    assert_eq!(
        refused,
        JournalError::LeaseLost {
            cause: LossCause::Released
        }
    );
    let source = refused.source().expect("LeaseLost has a source");
    assert_eq!(
        source.downcast_ref::<LossCause>(),
        Some(&LossCause::Released)
    );
    assert_eq!(journal.tip().await, 2);
    assert_eq!(world.tip().await, 2);

    world.clock.advance(TTL);
    assert_eq!(
        journal.append(bytes("e3")).await,
        Err(JournalError::LeaseLost {
            cause: LossCause::Released
        }),
        "the first cause wins over the deadline passing later"
    );
    assert_eq!(lease.lost().await, LossCause::Released);
}

async fn renew_moves_the_deadline_to_send_time_plus_ttl_minus_margin(backend: Backend) {
    let world = World::new(backend).await;
    let store = world.store(replica_1());
    let (lease, journal) = open(&store).await;

    world.clock.advance(Duration::from_secs(5));
    lease.renew().await.unwrap();
    let valid_until = Instant::from_origin(Duration::from_secs(14));
    assert_eq!(lease.valid_until(), valid_until, "sent at 5 s + 9 s");
    assert_eq!(lease.epoch(), 1, "renew keeps the token");

    world
        .clock
        .advance(Duration::from_secs(9) - Duration::from_nanos(1));
    assert_eq!(journal.append(bytes("e1")).await, Ok(2));
    world.clock.advance(Duration::from_nanos(1));
    assert_eq!(
        journal.append(bytes("e2")).await,
        Err(JournalError::LeaseLost {
            cause: LossCause::Deadline { valid_until }
        })
    );
    assert_eq!(world.tip().await, 2);
}

/// As in the stale-writer test, A's host is suspended for a TTL while B takes over; this time A
/// renews first when it wakes, learns it was overtaken, and its journal refuses to send.
async fn append_after_being_overtaken_is_refused_with_the_new_holders_token(backend: Backend) {
    let world = World::new(backend).await;
    let a_clock = ManualClock::new();
    let a = world.store_with(replica_1(), world.ledger.clone(), Arc::new(a_clock.clone()));
    let (a_lease, a_journal) = open(&a).await;

    world.clock.advance(TTL);
    let b_lease = world.store(replica_2()).acquire_lease(&s1()).await.unwrap();
    assert_eq!(b_lease.epoch(), 2);

    assert_eq!(
        a_lease.renew().await,
        Err(LeaseError::Held {
            holder_token: Some(2)
        })
    );
    let cause = LossCause::Overtaken {
        holder_token: Some(2),
    };
    assert_eq!(a_lease.lost().await, cause);
    assert_eq!(
        a_journal.append(bytes("a1")).await,
        Err(JournalError::LeaseLost { cause })
    );
    assert_eq!(world.records().await, [fence(1, replica_1(), 1)]);
}

// --- Ambiguous and failed appends ---------------------------------------------------------

/// Opens `s1` for replica-1 over a [`FaultyLedger`] wrapping the world's ledger.
async fn open_faulty(world: &World) -> (Arc<FaultyLedger>, Store, JournalLease, Journal) {
    let ledger = Arc::new(FaultyLedger::new(world.ledger.clone()));
    let store = world.store_with(replica_1(), ledger.clone(), Arc::new(world.clock.clone()));
    let (lease, journal) = open(&store).await;
    (ledger, store, lease, journal)
}

/// replica-1's store over a [`FaultyLedger`] and its lease on `s1`, the journal not opened yet.
async fn faulty_lease(world: &World) -> (Arc<FaultyLedger>, Store, JournalLease) {
    let ledger = Arc::new(FaultyLedger::new(world.ledger.clone()));
    let store = world.store_with(replica_1(), ledger.clone(), Arc::new(world.clock.clone()));
    let lease = store.acquire_lease(&s1()).await.unwrap();
    (ledger, store, lease)
}

/// Asserts that opening a journal with `lease` (epoch 1) is refused as stale below a fence of
/// epoch `highest_fence`; `why` is said when it is not.
async fn assert_stale_epoch(store: &Store, lease: &JournalLease, highest_fence: u64, why: &str) {
    assert_eq!(
        store.open_journal(lease).await.err(),
        Some(JournalError::StaleEpoch {
            epoch: 1,
            highest_fence
        }),
        "{why}"
    );
}

/// What replica-1's journal replays after appending `e1` and `e2` behind its fence.
fn e1_e2_after_the_fence() -> Vec<Entry> {
    entries([
        (2, event(replica_1(), 1, 1, "e1")),
        (3, event(replica_1(), 1, 2, "e2")),
    ])
}

/// Asserts that `journal` refuses the next append (of `payload`) as poisoned by `first`.
async fn assert_poisoned_by(journal: &Journal, payload: &str, first: JournalError) {
    assert_eq!(
        journal.append(bytes(payload)).await,
        Err(JournalError::Poisoned {
            first: Box::new(first)
        })
    );
}

/// Asserts that `error` is an ambiguous outcome at `expected` for the injected timeout.
fn assert_ambiguous_timeout(error: &JournalError, expected: Seq) {
    let JournalError::Ambiguous {
        expected: at,
        reason,
    } = error
    else {
        panic!("expected Ambiguous, got {error:?}");
    };
    assert_eq!(*at, expected);
    assert!(reason.contains(TIMEOUT), "reason: {reason}");
}

async fn unknown_outcome_that_committed_is_resolved_by_reading_back(backend: Backend) {
    let world = World::new(backend).await;
    let (ledger, store, _lease, journal) = open_faulty(&world).await;

    ledger.fail_append(AppendFault::CommitThenUnknown);
    assert_eq!(journal.append(bytes("e1")).await, Ok(2));
    assert!(!journal.is_poisoned().await);
    assert_eq!(journal.tip().await, 2);
    assert_eq!(
        journal.append(bytes("e2")).await,
        Ok(3),
        "the journal keeps working"
    );
    assert_eq!(store.replay(&s1()).await.unwrap(), e1_e2_after_the_fence());
}

async fn conflict_with_our_own_committed_record_is_a_success(backend: Backend) {
    let world = World::new(backend).await;
    let (ledger, store, _lease, journal) = open_faulty(&world).await;

    ledger.fail_append(AppendFault::CommitThenConflict);
    assert_eq!(journal.append(bytes("e1")).await, Ok(2));
    assert!(!journal.is_poisoned().await);
    assert_eq!(journal.append(bytes("e2")).await, Ok(3));
    assert_eq!(store.replay(&s1()).await.unwrap(), e1_e2_after_the_fence());
}

async fn unknown_outcome_not_visible_on_read_back_is_ambiguous_and_poisons(backend: Backend) {
    let world = World::new(backend).await;
    let (ledger, _store, _lease, journal) = open_faulty(&world).await;

    ledger.fail_append(AppendFault::LostUnknown);
    let ambiguous = journal.append(bytes("e1")).await.unwrap_err();
    assert_ambiguous_timeout(&ambiguous, 1);
    assert!(ambiguous.poisons());
    assert!(journal.is_poisoned().await);
    assert_eq!(journal.tip().await, 1, "the tip did not move");
    assert_eq!(world.tip().await, 1);

    assert_poisoned_by(&journal, "e2", ambiguous).await;
    assert_eq!(world.records().await, [fence(1, replica_1(), 1)]);
}

async fn unknown_outcome_with_a_failed_read_back_is_ambiguous_and_poisons(backend: Backend) {
    let world = World::new(backend).await;
    let (ledger, _store, _lease, journal) = open_faulty(&world).await;

    ledger.fail_append(AppendFault::LostUnknown);
    ledger.fail_read();
    let ambiguous = journal.append(bytes("e1")).await.unwrap_err();
    assert_ambiguous_timeout(&ambiguous, 1);
    assert!(journal.is_poisoned().await);
    assert_eq!(journal.tip().await, 1);
    assert_poisoned_by(&journal, "e2", ambiguous).await;
    assert_eq!(world.records().await, [fence(1, replica_1(), 1)]);
}

async fn unknown_outcome_with_a_foreign_record_on_read_back_is_fenced(backend: Backend) {
    let world = World::new(backend).await;
    let (ledger, _store, _lease, journal) = open_faulty(&world).await;

    ledger.fail_append(AppendFault::LostToForeign);
    let fenced = JournalError::Fenced {
        expected: 1,
        actual: 2,
    };
    assert_eq!(journal.append(bytes("e1")).await, Err(fenced.clone()));
    assert!(journal.is_poisoned().await);
    assert_eq!(journal.tip().await, 1);
    assert_poisoned_by(&journal, "e2", fenced).await;
    assert_eq!(
        world.records().await,
        [fence(1, replica_1(), 1), foreign_event(1)]
    );
}

async fn unavailable_ledger_leaves_the_journal_usable(backend: Backend) {
    let world = World::new(backend).await;
    let (ledger, store, _lease, journal) = open_faulty(&world).await;

    ledger.fail_append(AppendFault::Unavailable);
    let refused = journal.append(bytes("lost")).await.unwrap_err();
    assert!(
        matches!(
            refused,
            JournalError::Ledger(LedgerError::Unavailable { .. })
        ),
        "got {refused:?}"
    );
    assert!(!refused.poisons());
    assert!(!journal.is_poisoned().await);
    assert_eq!(journal.tip().await, 1);
    assert_eq!(journal.append(bytes("e1")).await, Ok(2));
    assert_eq!(
        store.replay(&s1()).await.unwrap(),
        entries([(2, event(replica_1(), 1, 1, "e1"))]),
        "the failed append wrote nothing and used up no writer sequence number"
    );
}

async fn open_resolves_an_unknown_fence_by_reading_back(backend: Backend) {
    let world = World::new(backend).await;
    let (ledger, store, lease) = faulty_lease(&world).await;

    ledger.fail_append(AppendFault::CommitThenUnknown);
    let journal = store.open_journal(&lease).await.unwrap();
    assert_eq!(journal.tip().await, 1);
    assert_eq!(ledger.appends(), 1, "the fence was sent once");
    assert_eq!(journal.append(bytes("e1")).await, Ok(2));
    assert_eq!(
        world.records().await,
        [fence(1, replica_1(), 1), event(replica_1(), 1, 1, "e1")]
    );
}

/// The fence's outcome is unknown and a competitor's record sits where the fence would be: the
/// fence did not commit, so opening re-reads and tries again after it.
async fn open_retries_when_read_back_finds_a_foreign_record_instead_of_the_fence(backend: Backend) {
    let world = World::new(backend).await;
    let (ledger, store, lease) = faulty_lease(&world).await;

    ledger.fail_append(AppendFault::LostToForeign);
    let journal = store.open_journal(&lease).await.unwrap();
    assert_eq!(ledger.appends(), 2, "the fence was sent twice");
    assert_eq!(journal.tip().await, 2);
    assert_eq!(journal.append(bytes("e1")).await, Ok(3));
    assert_eq!(
        world.records().await,
        [
            foreign_event(1),
            fence(1, replica_1(), 1),
            event(replica_1(), 1, 1, "e1"),
        ]
    );
}

async fn open_with_an_unresolvable_fence_is_ambiguous(backend: Backend) {
    let world = World::new(backend).await;
    let (ledger, store, lease) = faulty_lease(&world).await;

    ledger.fail_append(AppendFault::LostUnknown);
    let refused = store.open_journal(&lease).await.unwrap_err();
    assert_ambiguous_timeout(&refused, 0);
    assert_eq!(world.tip().await, 0);
}

// --- Stale epochs and fence retries -------------------------------------------------------

async fn open_refuses_a_lease_epoch_below_the_highest_fence(backend: Backend) {
    let world = World::new(backend).await;
    append_foreign(&*world.intruder, &s1(), foreign_fence(5)).await;
    append_foreign(&*world.intruder, &s1(), foreign_event(1)).await;
    let store = world.store(replica_1());
    let lease = store.acquire_lease(&s1()).await.unwrap();
    assert_eq!(lease.epoch(), 1);

    assert_stale_epoch(&store, &lease, 5, "epoch 1 is below fence 5").await;
    assert_eq!(world.tip().await, 2, "no fence was written");
}

async fn open_refuses_a_lease_epoch_equal_to_the_highest_fence(backend: Backend) {
    let world = World::new(backend).await;
    append_foreign(&*world.intruder, &s1(), foreign_fence(1)).await;
    let store = world.store(replica_1());
    let lease = store.acquire_lease(&s1()).await.unwrap();

    assert_stale_epoch(
        &store,
        &lease,
        1,
        "the lease epoch must be strictly greater",
    )
    .await;
    assert_eq!(world.records().await, [foreign_fence(1)]);
}

fn fence_attempts(attempts: u32) -> StoreConfig {
    StoreConfig {
        fence_attempts: attempts,
        ..StoreConfig::default()
    }
}

/// A store for replica-1 over a [`RacingLedger`] that loses `races` fences to `sneak`.
fn racing_store(
    world: &World,
    sneak: Sneak,
    races: u64,
    attempts: u32,
) -> (Arc<RacingLedger>, Store) {
    let ledger = Arc::new(RacingLedger::new(world.ledger.clone(), sneak, races));
    let store = world
        .store_with(replica_1(), ledger.clone(), Arc::new(world.clock.clone()))
        .with_config(fence_attempts(attempts));
    (ledger, store)
}

async fn open_retries_the_fence_after_losing_the_race_to_the_tip(backend: Backend) {
    let world = World::new(backend).await;
    let (ledger, store) = racing_store(&world, Sneak::Events, 2, 3);

    let (_lease, journal) = open(&store).await;
    assert_eq!(ledger.raced(), 2);
    assert_eq!(
        journal.tip().await,
        3,
        "the fence lands after both foreign events"
    );
    assert_eq!(journal.append(bytes("e1")).await, Ok(4));
    assert_eq!(
        world.records().await,
        [
            foreign_event(1),
            foreign_event(2),
            fence(1, replica_1(), 1),
            event(replica_1(), 1, 1, "e1"),
        ]
    );
}

async fn open_gives_up_with_fence_contention_when_every_attempt_conflicts(backend: Backend) {
    let world = World::new(backend).await;
    let (ledger, store) = racing_store(&world, Sneak::Events, u64::MAX, 3);
    let lease = store.acquire_lease(&s1()).await.unwrap();

    assert_eq!(
        store.open_journal(&lease).await.err(),
        Some(JournalError::FenceContention { attempts: 3 })
    );
    assert_eq!(ledger.raced(), 3, "one try per attempt");
    assert_eq!(
        world.records().await,
        [foreign_event(1), foreign_event(2), foreign_event(3)],
        "no fence committed"
    );
}

async fn open_refuses_when_a_higher_fence_wins_the_race(backend: Backend) {
    let world = World::new(backend).await;
    let (ledger, store) = racing_store(&world, Sneak::Fence(7), 1, 3);
    let lease = store.acquire_lease(&s1()).await.unwrap();

    assert_stale_epoch(
        &store,
        &lease,
        7,
        "the retry re-reads the fences before trying again",
    )
    .await;
    assert_eq!(ledger.raced(), 1);
    assert_eq!(world.records().await, [foreign_fence(7)]);
}

/// Each lost race also costs 5 s, so the third attempt starts at 10 s, past the local deadline
/// of 9 s: opening retries only while the lease is valid.
async fn open_stops_retrying_the_fence_once_the_lease_is_lost(backend: Backend) {
    let world = World::new(backend).await;
    let ledger = Arc::new(
        RacingLedger::new(world.ledger.clone(), Sneak::Events, u64::MAX)
            .with_delay(world.clock.clone(), Duration::from_secs(5)),
    );
    let store = world
        .store_with(replica_1(), ledger.clone(), Arc::new(world.clock.clone()))
        .with_config(fence_attempts(8));
    let lease = store.acquire_lease(&s1()).await.unwrap();

    assert_eq!(
        store.open_journal(&lease).await.err(),
        Some(JournalError::LeaseLost {
            cause: LossCause::Deadline {
                valid_until: Instant::from_origin(VALID_FOR)
            }
        })
    );
    assert_eq!(
        ledger.raced(),
        2,
        "two attempts were made while the lease was valid"
    );
    assert_eq!(world.records().await, [foreign_event(1), foreign_event(2)]);
}
