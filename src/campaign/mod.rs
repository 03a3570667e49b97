//! Campaigns (docs/campaigns.md): scenario files, swarm profiles, run
//! requests. The only part of the library that drives worlds, checkers and reports together.
//!
//! - [`scenario`] — scenario files (TOML): world, workload, faults, expectations.
//! - [`swarm`] — swarm testing: per seed, which fault kinds are on and how hard.
//! - [`coverage`] — coverage events: the "sometimes" a run reached.
//! - [`request`] — what `leasesim run` asks for, resolved to a run file
//!   ([`crate::sim::runfile`]).
//! - which runs (seeds × scenarios, shards, resume) is [`crate::results::plan`]: reports judge
//!   a campaign's completeness against it.
//! - [`execute`] — one run: world, judgement, coverage → a run record.
//! - [`single`] — one run of `leasesim run`/`replay`: world, verdict, `result.json`.
//! - [`driver`] — `leasesim campaign`: jobs, progress, results, shrinking, report.
//! - [`shrink`], [`ddmin`] and [`retime`] — reducing a failing run to a minimal one.
//! - [`mutants`] — the detection table of planted bugs (`--mutants`).

pub mod counterexample;
pub mod coverage;
pub mod ddmin;
pub mod driver;
pub mod execute;
pub mod mutants;
pub mod request;
pub mod retime;
pub mod scenario;
pub mod shrink;
pub mod single;
pub mod stopwatch;
pub mod swarm;
