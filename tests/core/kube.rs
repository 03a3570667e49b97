//! The conformance suite over `KubeLease`, talking HTTP on loopback to the world's simulated
//! Kubernetes API server (`leasesim::sim::apiserver`), with a manual clock as the candidates'
//! clock (the suite's advance moves it); and the kube mutants failing exactly the rules they
//! break.

use std::sync::Arc;
use std::time::Duration;

use std::sync::Mutex;

use async_trait::async_trait;
use tokio::sync::Barrier;

use leasesim::clock::ManualClock;
use leasesim::conformance::{RULES, Subject};
use leasesim::hooks::{HookSlot, Hooks, Observation, PausePoint};
use leasesim::lease::{
    KubeLease, KubeLeaseConfig, Lease, LeaseError, Owner, SessionId, SessionLease, client_over,
};
use leasesim::mutant::Mutant;
use leasesim::net::{tcp_dialer, tcp_incoming};
use leasesim::sim::apiserver::{ApiServer, ApiServerConfig};
use leasesim::storage::MemStorage;

const TTL: Duration = Duration::from_secs(10);
const NAMESPACE: &str = "leasesim";

/// A fresh API server on a free loopback port and a `KubeLease` (running `mutant`) talking to
/// it; call inside a tokio runtime (the server and kube's request buffer run on it).
async fn kube_lease(mutant: Option<Mutant>) -> Subject {
    let (lease, clock) = kube_lease_with(mutant, HookSlot::default()).await;
    Subject::with_manual_clock(Arc::new(lease), clock, TTL)
}

/// The `KubeLease` and its clock, against a fresh API server calling `hooks` at the start of
/// each request.
async fn kube_lease_with(mutant: Option<Mutant>, hooks: HookSlot) -> (KubeLease, ManualClock) {
    let disk = Arc::new(MemStorage::new());
    let server = ApiServer::open(disk, ApiServerConfig::default().with_hooks(hooks))
        .await
        .expect("the API server opens on empty storage");
    let (addr, incoming) = tcp_incoming("127.0.0.1:0").await.expect("a loopback port");
    tokio::spawn(Arc::new(server).serve(incoming));
    kube_lease_at(&addr.to_string(), mutant)
}

/// A `KubeLease` on its own manual clock, talking to the API server at `addr`.
fn kube_lease_at(addr: &str, mutant: Option<Mutant>) -> (KubeLease, ManualClock) {
    let clock = ManualClock::new();
    let client = client_over(tcp_dialer(), addr, NAMESPACE, Duration::from_secs(5));
    let config = KubeLeaseConfig {
        namespace: NAMESPACE.to_owned(),
        ttl: TTL,
        clock: Arc::new(clock.clone()),
        mutant,
        calls: None,
        hooks: Default::default(),
    };
    let lease = KubeLease::new(client, config).expect("a whole-second TTL");
    (lease, clock)
}

mod kube_lease {
    leasesim::conformance_tests!(|| super::kube_lease(None));
}

/// What a shared cluster sees: every rule at once against one API server (each through its
/// own `KubeLease`, as separate processes would be), under one run prefix, twice — a second
/// run meets the first one's objects only if prefixes collide.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_rule_at_once_on_one_api_server_twice() {
    let disk = Arc::new(MemStorage::new());
    let server = ApiServer::open(disk, ApiServerConfig::default())
        .await
        .unwrap();
    let (addr, incoming) = tcp_incoming("127.0.0.1:0").await.unwrap();
    tokio::spawn(Arc::new(server).serve(incoming));
    for run in ["run-1-", "run-2-"] {
        let mut runs = Vec::new();
        for rule in RULES {
            let (lease, clock) = kube_lease_at(&addr.to_string(), None);
            let subject = Subject::with_manual_clock(Arc::new(lease), clock, TTL)
                .with_session_prefix(run)
                .unwrap();
            runs.push(tokio::spawn((rule.run)(subject)));
        }
        for outcome in runs {
            if let Err(violation) = outcome.await.unwrap() {
                panic!("{run}: {violation}");
            }
        }
    }
}

/// The rules `mutant` breaks over `KubeLease`, in suite order.
async fn broken_by(mutant: Mutant) -> Vec<&'static str> {
    let mut broken = Vec::new();
    for rule in RULES {
        if let Err(violation) = (rule.run)(kube_lease(Some(mutant)).await).await {
            broken.push(violation.rule);
        }
    }
    broken
}

/// A renew that moves the token breaks every rule that renews and then compares tokens, or
/// presents the renewed lease again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn transitions_bumped_on_renew_fails_exactly_the_renew_token_rules() {
    assert_eq!(
        broken_by(Mutant::TransitionsBumpedOnRenew).await,
        [
            "renew_keeps_token_and_extends_expiry",
            "retried_release_of_own_older_hold_frees_nothing"
        ]
    );
}

/// An owner that keeps `leaseTransitions` when it takes its own expired Lease back breaks the
/// rule that a takeover after expiry gets a new token, even for the same owner.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn expired_reacquire_keeps_transitions_fails_exactly_the_expired_token_rule() {
    assert_eq!(
        broken_by(Mutant::ExpiredReacquireKeepsTransitions).await,
        ["expired_same_owner_reacquire_gets_new_token"]
    );
}

/// Holds the API server's next requests at handler start in rounds of `n`: each round goes
/// through only once all `n` have arrived. With `n` candidates that each read and then write,
/// the second round (their writes) is handled only after every read of the first was
/// answered: all `n` decide from one resourceVersion.
#[derive(Debug, Default)]
struct Gate {
    armed: Mutex<Option<(Arc<Barrier>, usize)>>,
}

impl Gate {
    /// Gates the next `rounds` rounds of `n` requests.
    fn arm(&self, n: usize, rounds: usize) {
        *self.armed.lock().unwrap() = Some((Arc::new(Barrier::new(n)), n * rounds));
    }
}

#[async_trait]
impl Hooks for Gate {
    async fn pause_point(&self, _: PausePoint) {
        let barrier = {
            let mut armed = self.armed.lock().unwrap();
            let barrier = armed.as_mut().map(|(barrier, left)| {
                *left -= 1;
                (barrier.clone(), *left == 0)
            });
            if barrier.as_ref().is_some_and(|(_, last)| *last) {
                *armed = None;
            }
            barrier
        };
        if let Some((barrier, _)) = barrier {
            barrier.wait().await;
        }
    }

    fn observe(&self, _: Observation) {}
}

/// K1 (scenarios.md) against the API server: the holder's lease has expired for every
/// candidate, and 16 candidates all read the same resourceVersion before any of them writes.
/// Returns every candidate's outcome.
async fn sixteen_candidates_from_one_read(
    mutant: Option<Mutant>,
) -> (Lease, Vec<Result<Lease, LeaseError>>) {
    const N: usize = 16;
    let gate = Arc::new(Gate::default());
    let (lease, clock) = kube_lease_with(mutant, HookSlot::new(gate.clone())).await;
    let lease = Arc::new(lease);
    let session = SessionId::new("s1").unwrap();
    let first = lease
        .acquire(&session, &Owner::new("replica-0", 0))
        .await
        .unwrap();
    clock.advance(TTL);
    gate.arm(N, 2);
    let calls: Vec<_> = (0..N)
        .map(|i| {
            let (lease, session) = (lease.clone(), session.clone());
            tokio::spawn(async move {
                lease
                    .acquire(&session, &Owner::new(format!("replica-{}", i + 1), 0))
                    .await
            })
        })
        .collect();
    let mut outcomes = Vec::new();
    for call in calls {
        outcomes.push(call.await.unwrap());
    }
    (first, outcomes)
}

/// The right outcome of K1: exactly one update succeeds (leaseTransitions 2); every other
/// candidate gets 409, reads again, sees a live holder and is Held naming token 2.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn k1_candidates_deciding_from_one_read_one_update_wins() {
    let (first, outcomes) = sixteen_candidates_from_one_read(None).await;
    assert_eq!(first.token(), 1);
    let winners: Vec<u64> = outcomes
        .iter()
        .filter_map(|o| o.as_ref().ok())
        .map(Lease::token)
        .collect();
    assert_eq!(winners, [2]);
    let held = outcomes
        .iter()
        .filter(|o| {
            **o == Err(LeaseError::Held {
                holder_token: Some(2),
            })
        })
        .count();
    assert_eq!(held, 15, "{outcomes:?}");
}

/// `update-without-resource-version` on K1: every candidate's update lands, so all 16 "win"
/// with one token. No conformance rule can order 16 reads before their writes through the
/// `SessionLease` API alone (the server's handler hook does it here), so the mutant passes
/// the suite; the world's K1 scenario kills it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn update_without_resource_version_lets_every_candidate_win_k1() {
    let (_, outcomes) =
        sixteen_candidates_from_one_read(Some(Mutant::UpdateWithoutResourceVersion)).await;
    let winners: Vec<u64> = outcomes
        .iter()
        .filter_map(|o| o.as_ref().ok())
        .map(Lease::token)
        .collect();
    assert_eq!(winners, [2; 16], "{outcomes:?}");
}
