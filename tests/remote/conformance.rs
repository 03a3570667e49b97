//! The lease conformance suite against the remote driver, talking gRPC on loopback to a
//! lease service whose authority runs on a manual clock.

use std::sync::Arc;
use std::time::Duration;

use leasesim::clock::ManualClock;
use leasesim::conformance::Subject;
use leasesim::lease::MemLease;

use crate::support::lease_over_grpc;

const TTL: Duration = Duration::from_secs(10);

async fn remote_mem_lease() -> Subject {
    let clock = ManualClock::new();
    let authority = Arc::new(MemLease::new(Arc::new(clock.clone()), TTL));
    let (driver, served) = lease_over_grpc(authority, Arc::new(clock.clone())).await;
    Subject::with_manual_clock(Arc::new(driver), clock, TTL).keep_alive(served)
}

mod over_grpc {
    leasesim::conformance_tests!(super::remote_mem_lease);
}

/// The lease service's own authority (durable state on a simulated disk), called directly.
async fn durable_lease() -> Subject {
    use leasesim::lease::{DurableLease, DurableLeaseConfig};
    use leasesim::storage::MemStorage;
    let clock = ManualClock::new();
    let storage = Arc::new(MemStorage::new());
    let config = DurableLeaseConfig::with_ttl(TTL);
    let authority = DurableLease::open(storage, Arc::new(clock.clone()), config)
        .await
        .unwrap();
    Subject::with_manual_clock(Arc::new(authority), clock, TTL)
}

mod durable {
    leasesim::conformance_tests!(super::durable_lease);
}
