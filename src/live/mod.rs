//! Live mode (docs/live.md; issue 16): the same workload, history format, checkers
//! and report as the simulated world, on real processes of this machine, with a nemesis that
//! needs no root.
//!
//! # The processes of one run
//! `leasesim live` (the orchestrator) resolves its flags or scenario to a run file exactly as
//! `leasesim run` does ([`crate::campaign::request::RunRequest`]), writes it to `OUT/run.json`,
//! and starts, each under its own userspace TCP proxy link where it is a client:
//! - `leasesim serve lease --run OUT/run.json --history FILE --boot N …` (host `lease`; the
//!   gRPC backend), or nothing for `flock` (a directory, `OUT/leases/`), or an `etcd` server
//!   from the OS packages (host `etcd`, [`etcd`]);
//! - `leasesim serve ledger --run OUT/run.json --history FILE --boot N …` (host `ledger`);
//! - N × `leasesim replica --run OUT/run.json --name replica-K --incarnation I --lease TARGET
//!   --ledger HOST:PORT --history FILE` ([`target::LeaseTarget`]): the service layer running
//!   the run file's workload.
//!
//! Every child gets [`truth::EPOCH_ENV`] and, when the schedule drifts its clock, is started
//! under libfaketime (`LEASESIM_LIVE_DRIFT_PPM` tells it the rate it runs at). Every port is
//! on 127.0.0.1, picked free; every wait is bounded; every child is reaped, also when the
//! orchestrator itself is SIGKILLed (`PR_SET_PDEATHSIG`, set in the child by a spawner thread
//! that lives as long as the run).
//!
//! # The same code as the simulated world
//! A replica runs the world's workload (`crate::sim::workload`) and records through the
//! world's recorder and wrappers ([`crate::sim::record`]: [`crate::sim::record::Recorder::live`]
//! stamps lines with true time and appends them to the process's file); the lease service
//! records through the world's `crate::sim::backend::RecordingAuthority`. They stay in
//! `sim/` (the simulation's byte-identical runs depend on them); live mode imports them.
//!
//! # True time
//! The orchestrator's `CLOCK_MONOTONIC`, read by every process through a call libfaketime
//! cannot intercept ([`truth`]); each process also records its own clock (what the system
//! under test reads, faked or not) as `clock` segments.
//!
//! # Files of one run (`OUT/`)
//! - `run.json` — the resolved run file (the schema of `leasesim run`);
//! - `processes/HOST-BOOT.jsonl` — one [`lines::LineFile`] per process incarnation
//!   (`lease-0.jsonl`, `ledger-0.jsonl`, `replica-1-0.jsonl`, `replica-1-1.jsonl` after a
//!   restart), plus `orchestrator.jsonl` (the `config` line, `phase` lines, nemesis actions);
//! - `logs/HOST-BOOT.log` — each process's stdout and stderr;
//! - `data/lease/`, `data/ledger/` — the services' `--data`; `leases/` for flock;
//! - `history.jsonl` — the merged history, judged by the existing checkers; `result.json` and
//!   the run's verdict as for `leasesim run`.
//!
//! # What a process writes to its file
//! - First, one `clock` line for its host and boot: `from_us` = true time now,
//!   `local_from_us` = its own monotonic reading ([`crate::clock::RealClock`], created once at
//!   start; every local reading of the process is on that one clock), `drift_ppm` = the rate it
//!   was started at (`LEASESIM_LIVE_DRIFT_PPM`, default 0), `suspended` false.
//! - Operations: an `op` line at the invocation (pending: no completion) and the same `op` line,
//!   same id, again at its completion. Ids count from 1 in each file.
//! - `decision`, `validity`, `event` lines as they happen, stamped with true time.
//! - The ledger service, when it stops gracefully (SIGTERM), the final ledger: `ledger` lines
//!   of every session of the run file.
//!
//! # The merge (`merge`)
//! The orchestrator's `config` line; every operation, renumbered from 1 in order of
//! (`invoke_us`, file, id), the last line of an id winning; one still pending is completed at
//! the end of its process (the nemesis kill, or the run's end) as `info`, cut off; then
//! decisions, validity checks, events and nemesis lines by `at_us` (ties in file order); the
//! `phase` lines; every `clock` line by host, boot and `from_us`; the final ledger. A torn last
//! line of a killed process is dropped and reported, never silently; a damaged whole line is an
//! error.

pub mod etcd;
pub mod faketime;
pub mod lines;
pub mod merge;
pub mod nemesis;
pub mod orchestrate;
pub mod process;
pub mod proxy;
pub mod replica;
pub mod report;
pub mod spawn;
pub mod target;
pub mod truth;
