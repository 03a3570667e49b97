//! Checkers: the linearizability engine on hand-built histories and on the Jepsen histories
//! kept in the repository (`tests/data/jepsen`, with their source and licence).

mod bad_input;
mod cli;
mod differential;
mod engine;
mod families;
mod fuzz;
mod generated;
mod history_generated;
mod history_lease;
mod history_ledger;
mod jepsen;
mod judge;
mod sim_histories;
mod support;
#[path = "../common/world_runs.rs"]
mod world_runs;
