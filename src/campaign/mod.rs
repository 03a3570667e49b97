//! Campaigns (DESIGN.md, "Campaigns and reports"): scenario files, swarm profiles, run
//! files. The only part of the library that drives worlds, checkers and reports together.
//!
//! - [`scenario`] — scenario files (TOML): world, workload, faults, expectations.
//! - [`swarm`] — swarm testing: per seed, which fault kinds are on and how hard.
//! - [`coverage`] — coverage events: the "sometimes" a run reached.
//! - [`record`] — what a campaign keeps of each run (`results.jsonl`, `shrunk.jsonl`).
//! - [`runfile`] — run files (JSON): one fully resolved run, replayable exactly.

pub mod coverage;
pub mod record;
pub mod runfile;
pub mod scenario;
pub mod swarm;
