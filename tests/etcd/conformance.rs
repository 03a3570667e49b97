//! The conformance suite over `EtcdLease` in real time, every rule against this binary's
//! etcd (each rule has session ids of its own).
//!
//! The suite's TTL is etcd's plus [`EXPIRY_SLACK`]: etcd deletes an expired holder key
//! lazily (its lessor looks every 500 ms), so a contender waiting out a TTL waits that much
//! more. The suite's tightest rule, `renew_keeps_token_and_extends_expiry`, checks a hold is
//! still live three quarters of the suite's TTL after a renew: 3.75 s of etcd's 4 s.

use std::sync::Arc;

use leasesim::conformance::{RULES, Subject, broken_rules};
use leasesim::lease::etcd::EXPIRY_SLACK;
use leasesim::mutant::Mutant;
use leasesim::mutants::{self, Kill};

use crate::support::{TTL, lease};

/// An `EtcdLease` running `mutant`, in real time, its session ids under `prefix`.
pub async fn etcd_subject(mutant: Option<Mutant>, prefix: &str) -> Subject {
    let lease = lease(TTL, mutant).await;
    Subject::with_real_time(Arc::new(lease), TTL + EXPIRY_SLACK)
        .with_session_prefix(prefix)
        .expect("a short prefix")
}

mod etcd_lease {
    leasesim::conformance_tests!(|| async { super::etcd_subject(None, "correct/").await });
}

/// The rules `mutant` breaks over `EtcdLease`, in the suite's order. The rules run at once
/// (each on session ids of its own), so the whole suite takes about its longest rule.
async fn broken_by(mutant: Option<Mutant>) -> Vec<&'static str> {
    let prefix = format!("broken-by/{}/", mutant.map_or("correct", Mutant::name));
    let mut running = Vec::new();
    for rule in RULES {
        let subject = etcd_subject(mutant, &prefix).await;
        running.push(tokio::spawn((rule.run)(subject)));
    }
    broken_rules(&format!("{mutant:?}"), running).await
}

/// Every etcd mutant the catalogue says a conformance rule kills breaks that rule, and only
/// that one, over `EtcdLease`; the correct `EtcdLease` breaks none (the `etcd_lease` module
/// runs each rule as a test of its own too).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_etcd_conformance_kill_breaks_exactly_its_rule() {
    let mut planted = 0;
    for &mutant in Mutant::ALL {
        let Kill::Conformance { rule } = mutants::kill(mutant) else {
            continue;
        };
        if mutant.backend() != Some("etcd") {
            continue;
        }
        planted += 1;
        assert_eq!(broken_by(Some(mutant)).await, [rule], "{mutant}");
    }
    assert!(
        planted >= 1,
        "no etcd mutant is killed by a conformance rule"
    );
}
