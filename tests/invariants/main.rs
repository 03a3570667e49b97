//! The single-writer invariants (`leasesim::check::invariants`): hand-built histories that
//! violate each one and are caught with the right evidence, clean ones that pass, and the
//! simulated world's histories passing them all.

mod build;
mod definite;
mod hand;
mod kube;
mod pending;
mod signal;
mod sim;
#[path = "../common/world_runs.rs"]
mod world_runs;
