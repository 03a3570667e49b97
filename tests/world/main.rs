//! The simulated world: field cases replayed as explicit schedules and scripts, scenario
//! files, replica-side faults and calls, run files and their versions, bad input refused at load (and fuzzed readers), a
//! backend brought by the user, what swarm profiles draw of the newer faults, faults aimed at a
//! session's holder, and determinism
//! (same seed, same bytes).

mod apiserver;
mod authority_faults;
mod backend;
mod bad_input;
mod cli;
mod determinism;
mod field_bugs;
mod field_cases;
mod fuzz;
mod holder_targets;
mod hosted;
mod kube;
mod large;
mod on_engine;
mod plans;
mod replica_faults;
mod run_files;
mod scenario_errors;
mod scenarios;
mod support;
mod swarm_drawing;
#[path = "../common/world_runs.rs"]
mod world_runs;
