//! Running one world under a wall-clock timeout, on a harness thread of its own, with its
//! trace collected in memory, and writing a run's files into its folder. A run that hangs past
//! its timeout or panics is a harness error that names its seed. What runs is always a run file
//! ([`super::runfile`]).

use std::path::Path;
use std::sync::mpsc;
use std::time::Duration;

use serde::Serialize;

use super::config::{Workload, WorldConfig};
use super::schedule::FaultSchedule;
use super::trace::{TraceBuffer, trace_subscriber};
use super::world::{RunOutput, World, WorldError};

/// The determinism self-check's test hook ([`super::determinism`]): a process with this
/// variable set (to anything) appends one line to the trace it writes, so its files differ
/// from another process's. For tests of the self-check; never set it otherwise.
pub const PERTURB_ENV: &str = "LEASESIM_TEST_PERTURB_TRACE";

/// Why a run did not produce its files.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RunnerError {
    /// A file or option is wrong: exit code 2.
    #[error("{0}")]
    BadInput(String),
    /// The harness failed (hang, panic, nondeterminism, I/O): exit code 3.
    #[error("{0}")]
    Harness(String),
}

/// What a run's world did, as `result.json` carries it (the verdict and every check's result
/// are added by whoever judges the run: the campaign's single run,
/// docs/campaigns.md#run-files).
#[derive(Clone, Debug, Serialize)]
pub struct RunResult {
    /// The master seed.
    pub seed: u64,
    /// Replicas in the world.
    pub replicas: u32,
    /// Simulated duration asked for, ms.
    pub duration_ms: u64,
    /// Simulated time the run actually ended at, ms (past `duration_ms` by the liveness
    /// phase, if the run has one).
    pub ended_ms: u64,
    /// The fault schedule the world ran, every fault explicit (drawn from the seed for a
    /// swarm scenario, read from the scenario's or the run file's schedule otherwise; also
    /// written as `schedule.json`).
    pub schedule: FaultSchedule,
    /// Faults in `schedule`.
    pub faults: usize,
    /// `script.json` for a scripted run (the script it ran, in the run's folder), else none.
    pub script: Option<String>,
    /// History lines written.
    pub history_lines: usize,
    /// Operations in the history.
    pub operations: usize,
    /// The command that replays the run.
    pub replay: String,
    /// The scenario the run came from, if any (then `run.json` describes the run).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub scenario: Option<String>,
}

/// Creates `out` (bad input if it cannot be created).
///
/// # Errors
/// [`RunnerError::BadInput`] naming the folder.
pub fn create_out(out: &Path) -> Result<(), RunnerError> {
    std::fs::create_dir_all(out).map_err(|e| {
        RunnerError::BadInput(format!(
            "--out {}: cannot create that folder: {e}",
            out.display()
        ))
    })
}

/// Creates `out` and locks it for this run ([`leasesim_results::output::OutputLock`]).
///
/// # Errors
/// [`RunnerError::BadInput`] when it cannot be created or another command holds it.
pub fn lock_out(out: &Path) -> Result<leasesim_results::output::OutputLock, RunnerError> {
    leasesim_results::output::OutputLock::take(out).map_err(|e| match e {
        leasesim_history::input::InputError::Write { source, .. } => {
            RunnerError::BadInput(format!(
                "--out {}: cannot create that folder: {source}",
                out.display()
            ))
        }
        other => RunnerError::BadInput(format!("--out: {other}")),
    })
}

/// The timeline picture `leasesim run`/`replay` draw beside the history (the report's
/// timeline, docs/campaigns.md#run-files).
pub const TIMELINE_FILE: &str = "timeline.svg";

/// The files a run writes into its folder (besides `run.json`).
pub const RUN_FILES: [&str; 6] = [
    "history.jsonl",
    "trace.jsonl",
    "schedule.json",
    "script.json",
    "result.json",
    TIMELINE_FILE,
];

/// Removes what an earlier run left in `out` ([`RUN_FILES`]), so a run that fails midway never
/// leaves its new `run.json` beside an old history.
///
/// # Errors
/// [`RunnerError::Harness`] when a file is there and cannot be removed.
pub fn clear_outputs(out: &Path) -> Result<(), RunnerError> {
    leasesim_results::output::remove_stale(out, &RUN_FILES).map_err(|e| {
        RunnerError::Harness(format!("cannot remove a file left by an earlier run: {e}"))
    })
}

/// Writes the run's inputs as files of their own into `out`: `schedule.json` (the faults
/// applied) and, for a scripted run, `script.json` — what `leasesim run --schedule` and
/// `--script` read back.
///
/// # Errors
/// [`RunnerError::Harness`] when a file cannot be written.
pub fn write_inputs(
    out: &Path,
    schedule: &FaultSchedule,
    script: Option<&super::script::Script>,
) -> Result<(), RunnerError> {
    write(&out.join("schedule.json"), schedule.to_json().as_bytes())?;
    match script {
        Some(script) => write(&out.join("script.json"), script.to_json().as_bytes()),
        None => Ok(()),
    }
}

/// Writes `history.jsonl` and `trace.jsonl` into `out`.
///
/// # Errors
/// [`RunnerError::Harness`] when a file cannot be written.
pub fn write_outputs(
    out: &Path,
    history: &leasesim_history::History,
    trace: &[u8],
) -> Result<(), RunnerError> {
    write(&out.join("history.jsonl"), history.to_jsonl().as_bytes())?;
    if std::env::var_os(PERTURB_ENV).is_some() {
        // The determinism self-check's test hook: this process must differ.
        let perturbed = [trace, b"{\"perturbed\":true}\n"].concat();
        return write(&out.join("trace.jsonl"), &perturbed);
    }
    write(&out.join("trace.jsonl"), trace)
}

/// Writes `result` as `result.json` into `out` (pretty JSON).
///
/// # Errors
/// [`RunnerError::Harness`] when it cannot be written.
pub fn write_result<T: Serialize>(out: &Path, result: &T) -> Result<(), RunnerError> {
    let json = serde_json::to_string_pretty(result).expect("a result always serialises");
    write(&out.join("result.json"), json.as_bytes())
}

/// Writes `bytes` as the whole of `path` ([`leasesim_results::output::replace`]).
fn write(path: &Path, bytes: &[u8]) -> Result<(), RunnerError> {
    leasesim_results::output::replace(path, bytes).map_err(|e| RunnerError::Harness(e.to_string()))
}

/// Runs the world on a thread of its own (the simulation itself stays on that one thread)
/// so that a hang can be reported, with the trace collected in memory: the history and the
/// trace (JSON lines). Every run goes through here ([`super::runfile::execute`]).
///
/// # Errors
/// [`RunnerError::BadInput`] for a schedule or script the world refuses;
/// [`RunnerError::Harness`] for a failed host, a panic, or no end within `timeout` of wall-clock
/// time (each naming the seed).
pub fn run_with_timeout(
    config: &WorldConfig,
    schedule: FaultSchedule,
    workload: Workload,
    timeout: Duration,
) -> Result<(leasesim_history::History, Vec<u8>), RunnerError> {
    run_world_with_timeout(config, schedule, workload, timeout)
        .map(|(output, trace)| (output.history, trace))
}

/// [`run_with_timeout`], keeping all the world produced ([`RunOutput`]: the history and the
/// runs its replicas started) beside the trace.
///
/// # Errors
/// As [`run_with_timeout`].
// One harness thread per run, outside the simulation: the only way to time out a run that
// never yields back to us.
#[allow(clippy::disallowed_methods)]
pub fn run_world_with_timeout(
    config: &WorldConfig,
    schedule: FaultSchedule,
    workload: Workload,
    timeout: Duration,
) -> Result<(RunOutput, Vec<u8>), RunnerError> {
    let world = World::builder()
        .config(config.clone())
        .schedule(schedule)
        .workload(workload)
        .build()
        .map_err(|e| match e {
            WorldError::Simulation(_) | WorldError::NotDeterministic => {
                RunnerError::Harness(e.to_string())
            }
            refused => RunnerError::BadInput(refused.to_string()),
        })?;
    let (done, outcome) = mpsc::channel();
    let seed = config.seed;
    let trace = TraceBuffer::default();
    let trace_writer = trace.clone();
    std::thread::Builder::new()
        .name(format!("leasesim-run-{seed}"))
        .spawn(move || {
            let subscriber = trace_subscriber(trace_writer);
            let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                tracing::subscriber::with_default(subscriber, || world.run())
            }));
            let _ = done.send(result);
        })
        .map_err(|e| RunnerError::Harness(format!("cannot start the run's thread: {e}")))?;
    match outcome.recv_timeout(timeout) {
        Ok(Ok(Ok(output))) => Ok((output, trace.take())),
        Ok(Ok(Err(other))) => Err(RunnerError::Harness(format!(
            "run with seed {seed} failed: {other}"
        ))),
        Ok(Err(panic)) => Err(RunnerError::Harness(format!(
            "run with seed {seed} panicked: {}",
            panic_message(&panic)
        ))),
        Err(_) => Err(RunnerError::Harness(format!(
            "run with seed {seed} did not finish within {} of wall-clock time (a hang)",
            humantime::format_duration(timeout)
        ))),
    }
}

fn panic_message(panic: &Box<dyn std::any::Any + Send>) -> String {
    panic
        .downcast_ref::<String>()
        .cloned()
        .or_else(|| panic.downcast_ref::<&str>().map(|s| (*s).to_owned()))
        .unwrap_or_else(|| "(no message)".into())
}
