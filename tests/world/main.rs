//! The simulated world: field cases replayed as explicit schedules and scripts, scenario
//! files, and determinism (same seed, same bytes).

mod cli;
mod field_cases;
mod scenario_errors;
mod scenarios;
