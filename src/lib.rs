//! leasesim: deterministic simulation and model checking for session leases with fencing
//! tokens and fenced single-writer journals.
//!
//! The system under test lives in [`lease`], [`journal`], [`service`] and [`clock`]; it knows
//! nothing of the harness and takes time only from a [`clock::Clock`]. [`conformance`] checks
//! any [`lease::SessionLease`] backend against the lease contract. The contracts are fixed in
//! the project's design document, `docs/` (its index: `docs/README.md`); every rule cited here
//! is named there.

//! The conformance suite runs from here as before (its crate is `leasesim-conformance`): a
//! dependent crate writes
//!
//! ```
//! leasesim::conformance_tests!(|| async {
//!     let clock = leasesim::clock::ManualClock::new();
//!     let ttl = std::time::Duration::from_secs(10);
//!     let lease = leasesim::lease::MemLease::new(std::sync::Arc::new(clock.clone()), ttl);
//!     leasesim::conformance::Subject::with_manual_clock(std::sync::Arc::new(lease), clock, ttl)
//! });
//! ```

#![deny(missing_docs)]

pub use leasesim_conformance as conformance;
pub use leasesim_conformance::conformance_tests;
pub use leasesim_core::{BoxFuture, clock, hooks, mutant, service, storage, sync};
pub use leasesim_files as regular_file;
/// The history format and the vocabularies every layer shares (`leasesim_history`).
pub use leasesim_history as history;
pub use leasesim_history::exit;
pub use leasesim_net as net;
pub use leasesim_remote as remote;
pub use leasesim_report as report;
pub use leasesim_results as results;
pub use leasesim_sim as sim;
pub use leasesim_sim::mutants;

pub mod campaign;
pub mod check;
pub mod cli;
pub mod input;
pub mod journal;
pub mod lease;
pub mod live;
pub mod time;
