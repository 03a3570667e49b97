//! The targets binary: leasesim's command line with the hooks live gives the same bytes as
//! leasesim, and inside a world a host's `SystemTime::now()` is that host's wall clock
//! (docs/targets.md#the-targets-binary).

mod kube_leader_election;
mod kube_lease_manager;
mod kubert;
mod probe;
mod same_bytes;
mod support;
mod table;
