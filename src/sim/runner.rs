//! `leasesim run`: one world from a seed (and optionally a schedule and a script), written to
//! a folder as `history.jsonl`, `trace.jsonl`, `schedule.json` (the faults applied) and
//! `result.json`, with the command that replays it. A run that hangs past its wall-clock timeout or panics is a harness error that
//! names its seed.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, mpsc};
use std::time::Duration;

use serde::Serialize;

use super::schedule::FaultSchedule;
use super::script::Script;
use super::world::{self, Workload, WorldConfig, WorldError};

/// Everything that defines a run, as given on the command line.
#[derive(Clone, Debug)]
pub struct RunOptions {
    /// The world.
    pub config: WorldConfig,
    /// The schedule file, if any.
    pub schedule: Option<PathBuf>,
    /// Without a schedule file: draw faults from the seed (else no faults).
    pub random_faults: bool,
    /// The script file, if any (else a workload drawn from the seed).
    pub script: Option<PathBuf>,
    /// Where to write the run's files.
    pub out: PathBuf,
    /// Wall-clock limit of the run; past it the run is a hang.
    pub timeout: Duration,
}

impl RunOptions {
    /// The command line that replays this run exactly.
    pub fn replay_command(&self) -> String {
        let c = &self.config;
        let mut command = format!(
            "leasesim run --seed {} --replicas {} --duration {}",
            c.seed,
            c.replicas,
            humantime::format_duration(c.duration)
        );
        match &self.schedule {
            Some(schedule) => command += &format!(" --schedule {}", schedule.display()),
            None if !self.random_faults => command += " --no-faults",
            None => {}
        }
        if let Some(script) = &self.script {
            command += &format!(" --script {}", script.display());
        }
        command
    }
}

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

/// What `result.json` holds.
#[derive(Clone, Debug, Serialize)]
pub struct RunResult {
    /// Schema version of `result.json` (1).
    pub v: u32,
    /// The master seed.
    pub seed: u64,
    /// Replicas in the world.
    pub replicas: u32,
    /// Simulated duration, ms.
    pub duration_ms: u64,
    /// The schedule file, if any.
    pub schedule: Option<String>,
    /// The faults applied (also written as `schedule.json`).
    pub faults: usize,
    /// The script file, if any.
    pub script: Option<String>,
    /// History lines written.
    pub history_lines: usize,
    /// Operations in the history.
    pub operations: usize,
    /// The command that replays the run.
    pub replay: String,
    /// The scenario file the run came from, if any (then `run.json` describes the run).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub scenario: Option<String>,
}

/// Runs the world once and writes its files into `options.out`.
///
/// # Errors
/// [`RunnerError::BadInput`] for unreadable or malformed schedule/script files and bad
/// options; [`RunnerError::Harness`] for a hang, a panic or an I/O failure.
pub fn execute(options: &RunOptions) -> Result<RunResult, RunnerError> {
    let schedule = match &options.schedule {
        Some(path) => FaultSchedule::from_json(&read(path)?)
            .map_err(|e| RunnerError::BadInput(format!("{}: {e}", path.display())))?,
        None if options.random_faults => super::generate::random_schedule(&options.config),
        None => FaultSchedule::new(),
    };
    let schedule_json = schedule.to_json();
    let schedule_faults = schedule.faults.len();
    let workload = match &options.script {
        Some(path) => Workload::Scripted(
            Script::from_json(&read(path)?)
                .map_err(|e| RunnerError::BadInput(format!("{}: {e}", path.display())))?,
        ),
        None => Workload::Generated,
    };
    create_out(&options.out)?;
    let (history, trace) = run_with_timeout(&options.config, schedule, workload, options.timeout)?;
    write_outputs(&options.out, &history, &trace, &schedule_json)?;
    let result = RunResult {
        v: 1,
        seed: options.config.seed,
        replicas: options.config.replicas,
        duration_ms: options.config.duration.as_millis() as u64,
        schedule: options.schedule.as_ref().map(|p| p.display().to_string()),
        faults: schedule_faults,
        script: options.script.as_ref().map(|p| p.display().to_string()),
        history_lines: history.lines().len(),
        operations: history.ops().count(),
        replay: options.replay_command(),
        scenario: None,
    };
    write_result(&options.out, &result)?;
    Ok(result)
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

/// Writes `history.jsonl`, `trace.jsonl` and `schedule.json` (the faults applied) into `out`.
///
/// # Errors
/// [`RunnerError::Harness`] when a file cannot be written.
pub fn write_outputs(
    out: &Path,
    history: &crate::history::History,
    trace: &[u8],
    schedule_json: &str,
) -> Result<(), RunnerError> {
    write(&out.join("history.jsonl"), history.to_jsonl().as_bytes())?;
    write(&out.join("trace.jsonl"), trace)?;
    write(&out.join("schedule.json"), schedule_json.as_bytes())
}

/// Writes `result.json` into `out`.
///
/// # Errors
/// [`RunnerError::Harness`] when it cannot be written.
pub fn write_result(out: &Path, result: &RunResult) -> Result<(), RunnerError> {
    let json = serde_json::to_string_pretty(result).expect("a result always serialises");
    write(&out.join("result.json"), json.as_bytes())
}

fn read(path: &Path) -> Result<String, RunnerError> {
    std::fs::read_to_string(path)
        .map_err(|e| RunnerError::BadInput(format!("cannot read {}: {e}", path.display())))
}

fn write(path: &Path, bytes: &[u8]) -> Result<(), RunnerError> {
    std::fs::write(path, bytes).map_err(|e| harness_io(path, e))
}

fn harness_io(path: &Path, error: std::io::Error) -> RunnerError {
    RunnerError::Harness(format!("cannot write {}: {error}", path.display()))
}

/// Runs the world on a thread of its own (the simulation itself stays on that one thread)
/// so that a hang can be reported, with the trace collected in memory: the history and the
/// trace (JSON lines). Shared by `leasesim run` and run files (`campaign::runfile`).
///
/// # Errors
/// [`RunnerError::BadInput`] for a schedule or script the world refuses;
/// [`RunnerError::Harness`] for a failed host, a panic, or no end within `timeout` of wall-clock
/// time (each naming the seed).
// One harness thread per run, outside the simulation: the only way to time out a run that
// never yields back to us.
#[allow(clippy::disallowed_methods)]
pub fn run_with_timeout(
    config: &WorldConfig,
    schedule: FaultSchedule,
    workload: Workload,
    timeout: Duration,
) -> Result<(crate::history::History, Vec<u8>), RunnerError> {
    let (done, outcome) = mpsc::channel();
    let config = config.clone();
    let seed = config.seed;
    let trace = TraceBuffer::default();
    let trace_writer = trace.clone();
    std::thread::Builder::new()
        .name(format!("leasesim-run-{seed}"))
        .spawn(move || {
            let subscriber = trace_subscriber(trace_writer);
            let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                tracing::subscriber::with_default(subscriber, || {
                    world::run(&config, &schedule, &workload)
                })
            }));
            let _ = done.send(result);
        })
        .map_err(|e| RunnerError::Harness(format!("cannot start the run's thread: {e}")))?;
    match outcome.recv_timeout(timeout) {
        Ok(Ok(Ok(output))) => Ok((output.history, trace.take())),
        Ok(Ok(Err(WorldError::Schedule(e)))) => {
            Err(RunnerError::BadInput(format!("bad fault schedule: {e}")))
        }
        Ok(Ok(Err(WorldError::Script(e)))) => {
            Err(RunnerError::BadInput(format!("bad script: {e}")))
        }
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

/// The trace: JSON lines stamped with true simulated time, from leasesim's own events only
/// (tonic and h2 events carry nothing a reviewer needs, and some are not stable across
/// versions). `RUST_LOG` overrides the filter.
fn trace_subscriber(writer: TraceBuffer) -> impl tracing::Subscriber + Send + Sync {
    use tracing_subscriber::EnvFilter;
    let filter =
        EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("leasesim=debug"));
    tracing_subscriber::fmt()
        .json()
        .with_env_filter(filter)
        .with_timer(SimTime)
        .with_current_span(false)
        .with_span_list(false)
        .with_writer(move || writer.clone())
        .finish()
}

/// Stamps events with true simulated time (`-` outside a host).
struct SimTime;

impl tracing_subscriber::fmt::time::FormatTime for SimTime {
    fn format_time(&self, w: &mut tracing_subscriber::fmt::format::Writer<'_>) -> std::fmt::Result {
        match turmoil::sim_elapsed() {
            Some(elapsed) => write!(w, "{}us", elapsed.as_micros()),
            None => write!(w, "-"),
        }
    }
}

/// An in-memory writer shared by the subscriber and the runner.
#[derive(Clone, Default)]
struct TraceBuffer(Arc<Mutex<Vec<u8>>>);

impl TraceBuffer {
    fn take(&self) -> Vec<u8> {
        std::mem::take(&mut *self.0.lock().unwrap_or_else(|p| p.into_inner()))
    }
}

impl Write for TraceBuffer {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}
