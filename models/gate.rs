//! The service's run-entry gate and held-lease registry under loom.
//!
//! - **GATE**: never two runs of one session inside the gate of one process; every waiting
//!   run gets in once the run ahead of it leaves, including when another waiter gave up
//!   (a lost wake-up shows as a loom deadlock); the gate's map is empty when nobody is in.
//! - **RELEASE**: graceful shutdown, racing the runs that hold leases, gets every lease
//!   released at the authority exactly once, and leaves nothing held or registered.
//!
//! The gate and the registry are on the `sync` shim. The runs here are the service's run
//! protocol without its renewer and work (enter the gate, acquire, register, release,
//! deregister, leave — `Service::run` in that order), since the renewer is a tokio task;
//! shutdown is the service's own `Registry::release_all`. Releasing goes through
//! `JournalLease::release`, whose once-only cell is tokio's `OnceCell`: loom runs it but does
//! not explore inside it.

use std::collections::BTreeMap;
use std::future::Future;
use std::pin::pin;
use std::sync::Arc;
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use async_trait::async_trait;
use leasesim::clock::{Clock, ManualClock};
use leasesim::journal::{JournalLease, MemLedger, Store};
use leasesim::lease::{Lease, LeaseError, MemLease, Owner, SessionId, SessionLease};
use leasesim::mutant::Mutant;
use leasesim::service::model::{Gate, Registry};
use loom::future::block_on;
use loom::sync::Mutex;
use loom::sync::atomic::{AtomicUsize, Ordering};
use loom::thread;

use crate::support::{Sometimes, assert_killed, check, s1};

const TTL: Duration = Duration::from_secs(10);

/// `runs` runs of one session entering and leaving the gate (`mutant` planted in it); with
/// `one_gives_up`, the last of them polls once and, if it has to wait, is cancelled.
pub fn runs_of_one_session(
    runs: usize,
    one_gives_up: bool,
    mutant: Option<Mutant>,
) -> impl Fn() + Send + Sync + 'static {
    runs_of_one_session_counting(runs, one_gives_up, mutant, Sometimes::default())
}

/// The same, counting the interleavings in which some run had to wait.
pub fn runs_of_one_session_counting(
    runs: usize,
    one_gives_up: bool,
    mutant: Option<Mutant>,
    waited: Sometimes,
) -> impl Fn() + Send + Sync + 'static {
    move || {
        let gate = Arc::new(Gate::default().with_mutant(mutant));
        let inside = Arc::new(AtomicUsize::new(0));
        let threads: Vec<_> = (0..runs)
            .map(|run| {
                let (gate, inside) = (gate.clone(), inside.clone());
                let gives_up = one_gives_up && run == runs - 1;
                thread::spawn(move || run_once(&gate, &inside, gives_up))
            })
            .collect();
        let mut most_inside = 0;
        let mut any_waited = false;
        for thread in threads {
            let visit = thread.join().expect("a run panicked");
            most_inside = most_inside.max(visit.most_inside);
            any_waited |= visit.waited;
        }
        assert!(
            most_inside <= 1,
            "GATE: {most_inside} runs of one session were inside the gate at once"
        );
        assert!(
            gate.sessions_inside() == 0,
            "GATE: the gate still holds the session after every run left"
        );
        if any_waited {
            waited.saw();
        }
    }
}

/// What one run saw: how many runs were inside with it (itself included), whether it had
/// to wait.
struct Visit {
    most_inside: usize,
    waited: bool,
}

fn run_once(gate: &Gate, inside: &AtomicUsize, gives_up: bool) -> Visit {
    let mut enter = pin!(gate.enter(&s1()));
    let first = enter.as_mut().poll(&mut Context::from_waker(Waker::noop()));
    let waited = first.is_pending();
    let guard = match first {
        Poll::Ready(guard) => guard,
        Poll::Pending if gives_up => return Visit::cancelled(),
        Poll::Pending => block_on(enter),
    };
    let most_inside = inside.fetch_add(1, Ordering::SeqCst) + 1;
    inside.fetch_sub(1, Ordering::SeqCst);
    drop(guard);
    Visit {
        most_inside,
        waited,
    }
}

impl Visit {
    /// A run that gave up waiting (its `Enter` future is dropped by the early return).
    fn cancelled() -> Self {
        Visit {
            most_inside: 0,
            waited: true,
        }
    }
}

/// A lease authority that counts, per token, how many releases reached it.
#[derive(Debug)]
struct CountingAuthority {
    inner: MemLease,
    granted: Mutex<BTreeMap<u64, usize>>,
    released: Mutex<BTreeMap<u64, usize>>,
}

#[async_trait]
impl SessionLease for CountingAuthority {
    async fn acquire(&self, session: &SessionId, owner: &Owner) -> Result<Lease, LeaseError> {
        let lease = self.inner.acquire(session, owner).await?;
        *self
            .granted
            .lock()
            .unwrap()
            .entry(lease.token())
            .or_default() += 1;
        Ok(lease)
    }

    async fn renew(&self, lease: &Lease) -> Result<Lease, LeaseError> {
        self.inner.renew(lease).await
    }

    async fn release(&self, lease: &Lease) -> Result<(), LeaseError> {
        *self
            .released
            .lock()
            .unwrap()
            .entry(lease.token())
            .or_default() += 1;
        self.inner.release(lease).await
    }
}

/// How the shutdown thread releases what the registry holds.
#[derive(Clone, Copy, Debug)]
pub enum Shutdown {
    /// The service's `Registry::release_all`, with a grace of zero (it does not wait).
    Service,
    /// A planted bug in the model itself: release each held lease's value at the authority
    /// directly, bypassing `JournalLease::release`, so a run's own release comes on top.
    Naive,
}

/// Two runs of one session (one process) and a graceful shutdown racing them.
pub fn shutdown_racing_two_runs(shutdown: Shutdown) -> impl Fn() + Send + Sync + 'static {
    shutdown_racing_two_runs_counting(shutdown, Sometimes::default())
}

/// The same, counting the interleavings in which shutdown released a run's lease before the
/// run itself got to it.
pub fn shutdown_racing_two_runs_counting(
    shutdown: Shutdown,
    shutdown_first: Sometimes,
) -> impl Fn() + Send + Sync + 'static {
    move || {
        let clock = ManualClock::new();
        let clock_dyn: Arc<dyn Clock> = Arc::new(clock.clone());
        let authority = Arc::new(CountingAuthority {
            inner: MemLease::new(clock_dyn.clone(), TTL),
            granted: Mutex::new(BTreeMap::new()),
            released: Mutex::new(BTreeMap::new()),
        });
        let store = Arc::new(Store::new(
            Owner::new("replica-1", 0),
            authority.clone(),
            Arc::new(MemLedger::new()),
            clock_dyn.clone(),
        ));
        let gate = Arc::new(Gate::default());
        let registry = Arc::new(Registry::default());
        let runs: Vec<_> = (0..2)
            .map(|_| {
                let (gate, registry, store) = (gate.clone(), registry.clone(), store.clone());
                thread::spawn(move || run_holding_lease(&gate, &registry, &store))
            })
            .collect();
        let stopper = {
            let (registry, authority) = (registry.clone(), authority.clone());
            thread::spawn(move || match shutdown {
                Shutdown::Service => block_on(registry.release_all(&clock_dyn, clock_dyn.now())),
                Shutdown::Naive => {
                    for lease in registry.held() {
                        let _ = block_on(authority.release(&lease.lease()));
                    }
                }
            })
        };
        let mut overtaken_by_shutdown = false;
        for run in runs {
            overtaken_by_shutdown |= run.join().expect("a run panicked");
        }
        stopper.join().expect("shutdown panicked");
        judge_releases(&authority);
        assert!(
            registry.held().is_empty(),
            "RELEASE: the registry still lists leases after every run ended"
        );
        assert!(
            gate.sessions_inside() == 0,
            "GATE: the gate still holds the session after every run left"
        );
        let survivor = Owner::new("replica-2", 0);
        let takeover = block_on(authority.inner.acquire(&s1(), &survivor));
        assert!(
            takeover.is_ok(),
            "RELEASE: a survivor cannot take the session over at once: {takeover:?}"
        );
        if overtaken_by_shutdown {
            shutdown_first.saw();
        }
    }
}

/// `Service::run`'s protocol around the work: gate, lease, registration; then release,
/// deregistration, leaving the gate. Returns whether shutdown had released the lease first.
fn run_holding_lease(gate: &Gate, registry: &Registry, store: &Store) -> bool {
    let _inside = block_on(gate.enter(&s1()));
    let lease: JournalLease = match block_on(store.acquire_lease(&s1())) {
        Ok(lease) => lease,
        Err(other) => panic!("one process's runs never compete for the lease: {other}"),
    };
    let registration = registry.register(&lease);
    // The work: anything may happen meanwhile (without this switch point, loom would run
    // the release straight after the registration and shutdown could never come first).
    thread::yield_now();
    let released_by_shutdown = lease.loss().is_some();
    let _ = block_on(lease.release());
    drop(registration);
    released_by_shutdown
}

/// RELEASE: every lease granted was released at the authority exactly once.
fn judge_releases(authority: &CountingAuthority) {
    let granted = authority.granted.lock().unwrap().clone();
    let released = authority.released.lock().unwrap().clone();
    for token in granted.keys() {
        let times = released.get(token).copied().unwrap_or(0);
        assert!(
            times == 1,
            "RELEASE: the lease with token {token} was released {times} times at the \
             authority; shutdown and its run must release it exactly once between them"
        );
    }
}

#[test]
fn two_runs_of_one_session_are_never_inside_together() {
    let waited = Sometimes::default();
    check(runs_of_one_session_counting(2, false, None, waited.clone()));
    waited.assert_reached("a run waiting at the gate");
}

#[test]
fn three_runs_of_one_session_are_never_inside_together_and_all_get_in() {
    check(runs_of_one_session(3, false, None));
}

#[test]
fn a_run_that_gives_up_waiting_does_not_keep_the_others_out() {
    check(runs_of_one_session(3, true, None));
}

#[test]
fn shutdown_racing_two_runs_releases_each_lease_exactly_once() {
    let shutdown_first = Sometimes::default();
    check(shutdown_racing_two_runs_counting(
        Shutdown::Service,
        shutdown_first.clone(),
    ));
    shutdown_first.assert_reached("shutdown releasing a lease before its run");
}

#[test]
fn gate_check_then_enter_is_killed_by_two_runs_inside_together() {
    assert_killed(
        "GATE",
        runs_of_one_session(2, false, Some(Mutant::GateCheckThenEnter)),
    );
}

#[test]
fn a_shutdown_bypassing_the_once_only_release_is_caught_releasing_twice() {
    assert_killed("RELEASE", shutdown_racing_two_runs(Shutdown::Naive));
}
