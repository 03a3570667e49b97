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
