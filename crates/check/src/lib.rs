//! Checkers: they judge a recorded history, whoever recorded it (the simulation, live mode,
//! Jepsen), and never import `sim/` (docs/architecture.md#dependency-rules).

mod granted;
pub mod invariants;
pub mod jepsen;
pub mod judge;
pub mod linearizability;

pub use leasesim_history::catalogue::{self, Check, UnknownCheck};
pub use leasesim_history::verdict::{self, CheckResult, CheckVerdict};
