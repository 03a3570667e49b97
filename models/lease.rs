//! `MemLease` under loom: clients racing acquire, renew and release on one session while a
//! clock thread moves the authority's time across the TTL.
//!
//! Each client runs a short script and records what the authority told it. After the join,
//! the main thread judges the records on the authority's clock. A grant's decision time is
//! its `expiry - ttl`, and decisions are ordered as those times are, because `MemLease`
//! reads its clock inside its critical section (reading it before the lock is the mutant
//! `ClockReadBeforeLock`, killed below):
//! - **TOKEN**: a renew keeps the token it renewed; two different holds never share a token;
//!   every token granted stays below the next takeover's, even after everything expired.
//! - **EXCL**: at most one live hold at any instant — a later hold (higher token) starts no
//!   earlier than the earlier hold ended (its last expiry, or its release).
//! - **EXPIRY**: a hold ends only at its expiry or by its own release, so a release never
//!   frees another owner's hold: a renew refused while the hold was provably live, with no
//!   release of that hold, is a violation.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use leasesim::clock::{Clock, Instant, ManualClock};
use leasesim::lease::{Lease, LeaseError, MemLease, Owner, SessionLease};
use leasesim::mutant::Mutant;
use loom::future::block_on;
use loom::thread;

use crate::support::{Sometimes, assert_killed, check, s1};

const TTL: Duration = Duration::from_secs(10);

/// A clock that crosses the TTL in two halves, so a renew can land between them.
pub const HALF_TTL_STEPS: &[Duration] = &[Duration::from_secs(5), Duration::from_secs(5)];

/// One step of a client's script. Renew and release act on the lease value the client was
/// last given (possibly stale); they are skipped when it has none.
#[derive(Clone, Copy, Debug)]
pub enum Op {
    Acquire,
    Renew,
    Release,
}

/// A client: an owner and its script.
#[derive(Clone, Debug)]
pub struct Client {
    pub owner: Owner,
    pub script: &'static [Op],
}

/// Everything a model varies.
#[derive(Clone, Debug)]
pub struct Scenario {
    pub clients: Vec<Client>,
    /// The clock thread's advances, in order.
    pub clock_steps: &'static [Duration],
    pub mutant: Option<Mutant>,
}

/// The script of a client that takes the lease, keeps it once and gives it back.
pub const ACQUIRE_RENEW_RELEASE: &[Op] = &[Op::Acquire, Op::Renew, Op::Release];

/// `n` clients with owners `replica-1..n`, each acquiring, renewing and releasing, and a
/// clock that jumps one TTL: every lease granted before the jump is expired after it.
pub fn racing_owners(n: usize) -> Scenario {
    Scenario {
        clients: (1..=n)
            .map(|i| Client {
                owner: Owner::new(format!("replica-{i}"), 0),
                script: ACQUIRE_RENEW_RELEASE,
            })
            .collect(),
        clock_steps: &[TTL],
        mutant: None,
    }
}

/// Two tasks of one process (one owner): a run that took the lease and renews its value,
/// and a second acquire of the same owner — after expiry it is a takeover with a new token,
/// and the first task's value is stale. The clock jumps one TTL.
pub fn one_owner_two_tasks() -> Scenario {
    let owner = Owner::new("replica-1", 0);
    Scenario {
        clients: vec![
            Client {
                owner: owner.clone(),
                script: &[Op::Acquire, Op::Renew],
            },
            Client {
                owner,
                script: &[Op::Acquire],
            },
        ],
        clock_steps: &[TTL],
        mutant: None,
    }
}

/// One owner's two tasks and a rival owner, with the clock crossing the TTL in two halves:
/// the first task takes the lease and renews it while the second re-acquires it live (same
/// token, a fresh expiry), then the rival tries once. A renew decided on an old reading
/// must not pull the expiry back below what the re-acquire was told.
pub fn one_owner_two_tasks_and_a_rival() -> Scenario {
    let owner = Owner::new("replica-1", 0);
    Scenario {
        clients: vec![
            Client {
                owner: owner.clone(),
                script: &[Op::Acquire, Op::Renew],
            },
            Client {
                owner,
                script: &[Op::Acquire],
            },
            Client {
                owner: Owner::new("replica-2", 0),
                script: &[Op::Acquire],
            },
        ],
        clock_steps: HALF_TTL_STEPS,
        mutant: None,
    }
}

impl Scenario {
    pub fn with_mutant(mut self, mutant: Mutant) -> Self {
        self.mutant = Some(mutant);
        self
    }

    pub fn with_clock_steps(mut self, steps: &'static [Duration]) -> Self {
        self.clock_steps = steps;
        self
    }

    /// The loom model: build, race, join, judge.
    pub fn model(self) -> impl Fn() + Send + Sync + 'static {
        self.model_counting(Sometimes::default())
    }

    /// The model, counting the interleavings in which a takeover happened after a hold
    /// lapsed or was released (the path the invariants are about).
    pub fn model_counting(self, takeovers: Sometimes) -> impl Fn() + Send + Sync + 'static {
        move || {
            let clock = ManualClock::new();
            let authority =
                Arc::new(MemLease::new(Arc::new(clock.clone()), TTL).with_mutant(self.mutant));
            let clients: Vec<_> = self
                .clients
                .iter()
                .map(|client| {
                    let (authority, clock, client) =
                        (authority.clone(), clock.clone(), client.clone());
                    thread::spawn(move || run_client(&authority, &clock, &client))
                })
                .collect();
            let steps = self.clock_steps;
            let mover = clock.clone();
            let ticker = thread::spawn(move || steps.iter().for_each(|&d| mover.advance(d)));
            let seen: Vec<Vec<Seen>> = clients
                .into_iter()
                .map(|client| client.join().expect("a client thread panicked"))
                .collect();
            ticker.join().expect("the clock thread panicked");
            let holds = Holds::from(&seen);
            holds.judge();
            assert_later_takeovers_get_higher_tokens(&authority, &clock, &holds);
            if holds.0.len() > 1 {
                takeovers.saw();
            }
        }
    }
}

/// What one client was told, in its program order.
#[derive(Clone, Debug)]
enum Seen {
    /// An acquire or renew succeeded; `renewed` is the token the client renewed, if a renew.
    Granted { lease: Lease, renewed: Option<u64> },
    /// A renew of the hold `(owner, token)` was refused; the clock read after the answer.
    RenewRefused { hold: Hold, after: Instant },
    /// The client released the hold `(owner, token)`; the clock read before the call.
    Released { hold: Hold, before: Instant },
}

type Hold = (Owner, u64);

fn run_client(authority: &MemLease, clock: &ManualClock, client: &Client) -> Vec<Seen> {
    let mut seen = Vec::new();
    let mut current: Option<Lease> = None;
    for op in client.script {
        match (op, current.clone()) {
            (Op::Acquire, _) => match block_on(authority.acquire(&s1(), &client.owner)) {
                Ok(lease) => {
                    seen.push(Seen::Granted {
                        lease: lease.clone(),
                        renewed: None,
                    });
                    current = Some(lease);
                }
                Err(LeaseError::Held { .. }) => {}
                Err(other) => panic!("MemLease acquire failed unexpectedly: {other}"),
            },
            (Op::Renew, Some(lease)) => match block_on(authority.renew(&lease)) {
                Ok(renewed) => {
                    seen.push(Seen::Granted {
                        lease: renewed.clone(),
                        renewed: Some(lease.token()),
                    });
                    current = Some(renewed);
                }
                Err(LeaseError::Held { .. }) => seen.push(Seen::RenewRefused {
                    hold: hold_of(&lease),
                    after: clock.now(),
                }),
                Err(other) => panic!("MemLease renew failed unexpectedly: {other}"),
            },
            (Op::Release, Some(lease)) => {
                let before = clock.now();
                block_on(authority.release(&lease)).expect("MemLease release cannot fail");
                seen.push(Seen::Released {
                    hold: hold_of(&lease),
                    before,
                });
                current = None;
            }
            (Op::Renew | Op::Release, None) => {}
        }
    }
    seen
}

fn hold_of(lease: &Lease) -> Hold {
    (lease.owner().clone(), lease.token())
}

/// Every hold granted in one execution, by token, with its life on the authority's clock.
struct Holds(BTreeMap<u64, HoldLife>);

#[derive(Debug)]
struct HoldLife {
    owner: Owner,
    /// Decision time of the hold's first grant.
    first_start: Instant,
    /// The latest expiry any grant of the hold carried.
    last_expiry: Instant,
    /// Releases of the hold: the client and the clock read before its call.
    released_before: Vec<(usize, Instant)>,
    /// Refused renews of the hold: the client and the clock read after the answer.
    refused_after: Vec<(usize, Instant)>,
}

impl HoldLife {
    /// The latest instant the hold can have ended: its expiry, or earlier if released.
    fn end(&self) -> Instant {
        let released = self.released_before.iter().map(|(_, before)| *before);
        released.fold(self.last_expiry, Instant::min)
    }

    /// Whether a client other than `client` released the hold no later than `after`. (A
    /// client's own release always comes after its renews: it drops the lease value.)
    fn released_by_another(&self, client: usize, after: Instant) -> bool {
        self.released_before
            .iter()
            .any(|(by, before)| *by != client && *before <= after)
    }
}

impl Holds {
    fn from(seen: &[Vec<Seen>]) -> Self {
        let mut holds = BTreeMap::new();
        for s in seen.iter().flatten() {
            if let Seen::Granted { lease, renewed } = s {
                if let Some(renewed) = renewed {
                    assert!(
                        *renewed == lease.token(),
                        "TOKEN: a renew of token {renewed} by {} answered with token {}: a \
                         renew keeps the token it renews",
                        lease.owner(),
                        lease.token()
                    );
                }
                let start = lease.expiry().saturating_sub(lease.ttl());
                let life = holds.entry(lease.token()).or_insert_with(|| HoldLife {
                    owner: lease.owner().clone(),
                    first_start: start,
                    last_expiry: lease.expiry(),
                    released_before: Vec::new(),
                    refused_after: Vec::new(),
                });
                assert!(
                    life.owner == *lease.owner(),
                    "TOKEN: token {} was granted to both {} and {}: each takeover needs a new \
                     token",
                    lease.token(),
                    life.owner,
                    lease.owner()
                );
                life.first_start = life.first_start.min(start);
                life.last_expiry = life.last_expiry.max(lease.expiry());
            }
        }
        for (client, seen) in seen.iter().enumerate() {
            for s in seen {
                match s {
                    Seen::Released { hold, before } => {
                        let life = holds.get_mut(&hold.1).expect("released a granted hold");
                        life.released_before.push((client, *before));
                    }
                    Seen::RenewRefused { hold, after } => {
                        let life = holds.get_mut(&hold.1).expect("renewed a granted hold");
                        life.refused_after.push((client, *after));
                    }
                    Seen::Granted { .. } => {}
                }
            }
        }
        Holds(holds)
    }

    fn judge(&self) {
        self.judge_exclusion();
        self.judge_expiry();
    }

    /// EXCL: by token order, each hold starts no earlier than every earlier hold ended.
    fn judge_exclusion(&self) {
        for (earlier_token, earlier) in &self.0 {
            for (later_token, later) in self.0.range(earlier_token + 1..) {
                assert!(
                    later.first_start >= earlier.end(),
                    "EXCL: two live holders at {:?}: {} holds token {earlier_token} until \
                     {:?}, and {} was granted token {later_token} at {:?}",
                    later.first_start,
                    earlier.owner,
                    earlier.end(),
                    later.owner,
                    later.first_start
                );
            }
        }
    }

    /// EXPIRY: a renew refused while the hold was still live (the clock read after the
    /// refusal is before its expiry) is only allowed after the hold's own release.
    fn judge_expiry(&self) {
        for (token, life) in &self.0 {
            for &(client, after) in &life.refused_after {
                let released = life.released_by_another(client, after);
                assert!(
                    released || after >= life.last_expiry,
                    "EXPIRY: {}'s hold (token {token}) was refused a renew at or before \
                     {after:?}, though it expires at {:?} and was not released by its \
                     holder: something else freed it",
                    life.owner,
                    life.last_expiry
                );
            }
        }
    }
}

/// TOKEN, forever: once every hold has lapsed, a newcomer's takeover gets a token above
/// every token this execution granted.
fn assert_later_takeovers_get_higher_tokens(
    authority: &MemLease,
    clock: &ManualClock,
    holds: &Holds,
) {
    clock.advance(TTL * 4);
    let newcomer = Owner::new("newcomer", 0);
    let lease = block_on(authority.acquire(&s1(), &newcomer)).expect("every hold has lapsed");
    let highest = holds.0.keys().next_back().copied().unwrap_or(0);
    assert!(
        lease.token() > highest,
        "TOKEN: a takeover after every hold lapsed got token {}, not above the {highest} \
         already granted",
        lease.token()
    );
}

#[test]
fn two_owners_racing_with_the_clock_keep_one_live_holder_and_rising_tokens() {
    let takeovers = Sometimes::default();
    check(racing_owners(2).model_counting(takeovers.clone()));
    takeovers.assert_reached("a second hold of the session");
}

#[test]
fn two_owners_with_a_clock_in_half_ttl_steps_keep_one_live_holder() {
    check(racing_owners(2).with_clock_steps(HALF_TTL_STEPS).model());
}

#[test]
fn three_owners_racing_with_the_clock_keep_one_live_holder_and_rising_tokens() {
    check(racing_owners(3).model());
}

#[test]
fn one_owner_with_a_stale_task_never_renews_into_its_newer_hold() {
    let takeovers = Sometimes::default();
    check(one_owner_two_tasks().model_counting(takeovers.clone()));
    takeovers.assert_reached("a same-owner takeover after expiry");
}

#[test]
fn one_owner_renewing_from_two_tasks_never_pulls_its_expiry_back_under_a_rival() {
    check(one_owner_two_tasks_and_a_rival().model());
}

#[test]
fn a_clock_read_before_the_lock_is_killed_by_two_live_holders() {
    let scenario = one_owner_two_tasks_and_a_rival().with_mutant(Mutant::ClockReadBeforeLock);
    assert_killed("EXCL", scenario.model());
}

#[test]
fn acquire_check_then_act_is_killed_by_two_live_holders() {
    let scenario = racing_owners(2).with_mutant(Mutant::AcquireCheckThenAct);
    assert_killed("EXCL", scenario.model());
}

#[test]
fn renew_ignoring_the_token_is_killed_by_a_renew_that_changes_the_token() {
    let scenario = one_owner_two_tasks().with_mutant(Mutant::RenewIgnoresToken);
    assert_killed("TOKEN", scenario.model());
}

#[test]
fn release_by_session_only_is_killed_by_a_hold_freed_before_its_expiry() {
    let scenario = racing_owners(2).with_mutant(Mutant::ReleaseBySessionOnly);
    assert_killed("EXPIRY", scenario.model());
}

#[test]
fn token_not_advanced_on_expiry_is_killed_by_two_owners_sharing_a_token() {
    let scenario = racing_owners(2).with_mutant(Mutant::TokenNotAdvancedOnExpiry);
    assert_killed("TOKEN", scenario.model());
}
