//! The checkers (`leasesim_check`); `leasesim check`, the command that runs the
//! linearizability checks on a history file; and `leasesim judge`, the one that runs every
//! check on it.

pub use leasesim_check::*;

pub mod command;
pub mod judge_command;
