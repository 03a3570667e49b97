//! The simulated world: field cases replayed as explicit schedules and scripts, and
//! determinism (same seed, same bytes).

mod cli;
mod field_cases;
