//! The conformance suite against `MemLease`, and a planted bug that the suite must catch.

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;

use leasesim::clock::ManualClock;
use leasesim::conformance::{RULES, SESSION_PREFIX_MAX_BYTES, Subject};
use leasesim::lease::{Lease, LeaseError, MemLease, Owner, SessionId, SessionLease};
use leasesim::mutant::Mutant;

const TTL: Duration = Duration::from_secs(10);

fn mem_lease(mutant: Option<Mutant>) -> Subject {
    let clock = ManualClock::new();
    let lease = MemLease::new(Arc::new(clock.clone()), TTL).with_mutant(mutant);
    Subject::with_manual_clock(Arc::new(lease), clock, TTL)
}

mod mem_lease {
    leasesim::conformance_tests!(|| async { super::mem_lease(None) });
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn token_not_advanced_on_expiry_fails_exactly_the_expiry_token_rules() {
    let mut broken = Vec::new();
    for rule in RULES {
        if let Err(violation) = (rule.run)(mem_lease(Some(Mutant::TokenNotAdvancedOnExpiry))).await
        {
            broken.push(violation.rule);
        }
    }
    assert_eq!(
        broken,
        [
            "token_strictly_greater_after_expiry",
            "expired_same_owner_reacquire_gets_new_token",
            "owner_chain_a_b_a_is_monotone",
            "concurrent_takeover_after_expiry_one_winner",
        ]
    );
}

/// A MemLease that notes every session id it is asked about.
#[derive(Debug)]
struct Noting {
    inner: MemLease,
    sessions: Arc<Mutex<BTreeSet<String>>>,
}

impl Noting {
    fn note(&self, session: &SessionId) {
        self.sessions.lock().unwrap().insert(session.to_string());
    }
}

#[async_trait]
impl SessionLease for Noting {
    async fn acquire(&self, session: &SessionId, owner: &Owner) -> Result<Lease, LeaseError> {
        self.note(session);
        self.inner.acquire(session, owner).await
    }

    async fn renew(&self, lease: &Lease) -> Result<Lease, LeaseError> {
        self.note(lease.session());
        self.inner.renew(lease).await
    }

    async fn release(&self, lease: &Lease) -> Result<(), LeaseError> {
        self.note(lease.session());
        self.inner.release(lease).await
    }
}

/// Every rule uses only session ids of its own namespace, `{run prefix}{rule}.…`, so rules
/// (and runs) share one backend without colliding.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_rule_uses_only_its_own_session_ids() {
    for rule in RULES {
        let clock = ManualClock::new();
        let sessions = Arc::new(Mutex::new(BTreeSet::new()));
        let lease = Noting {
            inner: MemLease::new(Arc::new(clock.clone()), TTL),
            sessions: sessions.clone(),
        };
        let subject = Subject::with_manual_clock(Arc::new(lease), clock, TTL)
            .with_session_prefix("run-7-")
            .unwrap();
        (rule.run)(subject).await.unwrap();
        let sessions = sessions.lock().unwrap();
        let own = format!("run-7-{}.", rule.name);
        assert!(!sessions.is_empty(), "{}", rule.name);
        assert!(
            sessions.iter().all(|s| s.starts_with(&own)),
            "{}: {sessions:?}",
            rule.name
        );
    }
}

#[test]
fn a_session_prefix_that_cannot_fit_is_refused() {
    let subject = || mem_lease(None);
    let long = "p".repeat(SESSION_PREFIX_MAX_BYTES + 1);
    assert!(matches!(
        subject().with_session_prefix(long),
        Err(LeaseError::InvalidSession { .. })
    ));
    assert!(matches!(
        subject().with_session_prefix("run\n"),
        Err(LeaseError::InvalidSession { .. })
    ));
    let longest = "p".repeat(SESSION_PREFIX_MAX_BYTES);
    assert!(subject().with_session_prefix(longest).is_ok());
}

#[test]
fn every_rule_has_a_distinct_name() {
    let mut names: Vec<_> = RULES.iter().map(|r| r.name).collect();
    names.sort_unstable();
    names.dedup();
    assert_eq!(names.len(), RULES.len());
    assert_eq!(RULES.len(), 20);
}
