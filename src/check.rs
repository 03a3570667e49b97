//! The checkers (`leasesim_check`), and `leasesim check`, the command that runs the
//! linearizability checks on a history file.

pub use leasesim_check::*;

pub mod command;
