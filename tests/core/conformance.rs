//! The conformance suite against `MemLease`, and a planted bug that the suite must catch.

use std::sync::Arc;
use std::time::Duration;

use leasesim::clock::ManualClock;
use leasesim::conformance::{RULES, Subject};
use leasesim::lease::MemLease;
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
        ]
    );
}

#[test]
fn every_rule_has_a_distinct_name() {
    let mut names: Vec<_> = RULES.iter().map(|r| r.name).collect();
    names.sort_unstable();
    names.dedup();
    assert_eq!(names.len(), RULES.len());
    assert_eq!(RULES.len(), 18);
}
