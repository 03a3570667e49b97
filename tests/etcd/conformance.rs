//! The conformance suite over `EtcdLease` in real time, every rule against this binary's
//! etcd (each rule has session ids of its own).
//!
//! The suite's TTL is etcd's plus [`EXPIRY_SLACK`]: etcd deletes an expired holder key
//! lazily (its lessor looks every 500 ms), so a contender waiting out a TTL waits that much
//! more. The suite's tightest rule, `renew_keeps_token_and_extends_expiry`, checks a hold is
//! still live three quarters of the suite's TTL after a renew: 3.75 s of etcd's 4 s.

use std::sync::Arc;

use leasesim::conformance::Subject;
use leasesim::lease::etcd::EXPIRY_SLACK;
use leasesim::mutant::Mutant;

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
