//! `leasesim-sim`: the simulated world on turmoil (docs/world.md), and the mutants' catalogue
//! and kill table ([`mutants`]).
//!
//! - [`world`] — [`world::World::builder`]: hosts, services, replicas, the run itself.
//! - [`config`] — the shape of a world and its workload, as plain data.
//! - [`apiserver`] — a Kubernetes API server for Lease objects (the `apiserver` host).
//! - [`backend`] — lease backends the world hosts (the gRPC services by default, or yours).
//! - [`runfile`] — run files: every run, fully resolved; [`runner`] runs one under a timeout
//!   and writes its folder; [`determinism`] replays one in two processes and compares.
//! - [`true_time`], [`clock`], [`gate`], [`freeze`] — true time, per-host clocks, the freeze
//!   gate, and pauses/suspends/stalls.
//! - [`schedule`], [`generate`], `nemesis` — fault schedules, drawing them, applying them;
//!   `aim` — resolving a fault aimed at a session's holder when it strikes;
//!   `kind_spelling` — the words a file writes for a drawn kind (the schedule's words).
//! - [`script`], [`plan`], `workload`, [`record`] — scripted, planned and generated workloads
//!   (a generated workload is a plan drawn from the seed), recorded as a history;
//!   [`to_history`] — the system under test's values as the history writes them;
//!   `versioned` — reading and writing their versioned JSON files.
//! - [`net`], [`seed`] — turmoil TCP as a transport; sub-seeds per subsystem.
//! - `stage`, `on_engine` — what runs the hosts and time: turmoil, or leasesim's engine
//!   (docs/world.md#the-world-on-the-engine), behind one interface the world and the nemesis
//!   use.
//! - `trace` — the run's trace, stamped with true simulated time (the runner collects it).
//! - [`hosted`] — the time and randomness code the world hosts unmodified reads (per host).
//! - [`errors`], [`reply_hold`] — the authority's error windows and one-way reply holds,
//!   which the nemesis opens and closes.
//!
//! Modules depend one way: `world` → `nemesis`, `workload`, `backend`, `hosts` → `config`,
//! `freeze` → `clock` → `gate`, `true_time`; none imports `world`.

mod aim;
pub mod apiserver;
pub mod backend;
pub mod clock;
pub mod config;
pub mod determinism;
pub mod errors;
mod fault_lines;
pub mod freeze;
pub mod gate;
pub mod generate;
pub mod hosted;
mod hosts;
mod kind_spelling;
pub mod mutants;
mod nemesis;
pub mod net;
mod on_engine;
pub mod plan;
pub mod record;
pub mod reply_hold;
pub mod runfile;
pub mod runner;
pub mod schedule;
pub mod script;
pub mod seed;
mod stage;
pub mod to_history;
mod trace;
pub mod true_time;
mod versioned;
pub mod wall;
pub mod workload;
pub mod world;
