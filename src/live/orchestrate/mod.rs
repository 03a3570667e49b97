//! `leasesim live`: one or more live runs (the contract is in [`crate::live`]). Each run
//! resolves its flags to a run file as `leasesim run` does, starts the services, one proxy
//! link per (replica, service) pair and the replicas, applies the nemesis in true time, heals,
//! runs the liveness phase, stops everything, merges the per-process files into
//! `history.jsonl` and judges it with the same judge as `leasesim run` (`result.json`, the
//! verdict line, the same exit codes). With `--runs N` (N > 1) each run goes into
//! `OUT/run-K/` and the last line sums them up.
//!
//! Here: the flags, a run from its request to its judgement, and the `Run` it owns;
//! `processes` starts and stops the run's processes, `drive` applies the nemesis in true
//! time.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use sha2::{Digest, Sha256};

mod drive;
mod processes;

use super::lines::LineFile;
use super::merge::{ProcessFile, merge_files};
use super::nemesis::HostClock;
use super::proxy::Link;
use super::spawn::{Proc, Spawner};
use super::truth::TrueClock;
use crate::campaign::request::RunRequest;
use crate::campaign::single::{RESULT_VERSION, ResultFile};
use crate::check::judge;
use crate::exit::Exit;
use crate::history::{History, Line, NemesisAction, NemesisLine, Phase, PhaseLine, hosts, micros};
use crate::mutant::Mutant;
use crate::results::record::RunRecord;
use crate::sim::config::WorldConfig;
use crate::sim::runfile::RunFile;
use crate::sim::runner::RunResult;

/// The lease backend of a live run.
#[derive(Clone, Copy, PartialEq, Eq, Debug, clap::ValueEnum)]
pub enum Backend {
    /// `leasesim serve lease` (host `lease`), the authority on its own clock.
    Grpc,
    /// FlockLease over `OUT/leases/` (no lease host).
    Flock,
    /// etcd from the OS packages (host `etcd`), through EtcdLease.
    Etcd,
}

/// `leasesim live`'s arguments.
#[derive(Clone, Debug, clap::Args)]
pub struct LiveArgs {
    /// The run: a seed and a scenario, or a seed and flags (as for `leasesim run`).
    #[command(flatten)]
    pub request: RunRequest,
    /// Folder of the run (run.json, processes/, logs/, data/, history.jsonl, result.json).
    #[arg(long, value_name = "DIR", default_value = "runs/live")]
    pub out: PathBuf,
    /// Runs to make: seeds SEED, SEED+1, …; each in OUT/run-K/ when more than one.
    #[arg(long, value_name = "N", default_value_t = 1, value_parser = clap::value_parser!(u64).range(1..=10_000))]
    pub runs: u64,
    /// The lease backend.
    #[arg(long, value_enum, default_value_t = Backend::Grpc)]
    pub backend: Backend,
    /// Wall-clock limit of one run (past it: a harness error, exit 3). Default: the run's
    /// duration and liveness phase plus a minute.
    #[arg(long, value_parser = crate::time::parse_duration)]
    pub timeout: Option<Duration>,
}

/// `leasesim live`: every run, its banner, progress and verdict printed; returns the exit
/// code (the worst of the runs', in docs/exit-codes.md's order).
pub fn main(args: LiveArgs) -> Exit {
    if let Err(error) = check_mutant(&args) {
        eprintln!("error: {error}");
        return Exit::BadInput;
    }
    // Held until every run and the report are written: a second command on this --out
    // would share its processes/ and data/ folders and merge their histories (N1).
    let _lock = match lock_out(&args.out) {
        Ok(lock) => lock,
        Err(error) => {
            eprintln!("error: {error}");
            return Exit::BadInput;
        }
    };
    let (spawner, runtime) = match start_workers() {
        Ok(workers) => workers,
        Err(error) => {
            eprintln!("error: {error}");
            return Exit::HarnessError;
        }
    };
    let mut runs = Runs::default();
    for k in 0..args.runs {
        if let Err(exit) = runs.make(&args, k, &spawner, &runtime) {
            return exit;
        }
    }
    runs.report(&args)
}

/// The spawner thread and the async runtime every run of the command shares.
fn start_workers() -> Result<(Spawner, tokio::runtime::Runtime), String> {
    let spawner =
        Spawner::start().map_err(|error| format!("cannot start the spawner thread: {error}"))?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|error| format!("cannot start the async runtime: {error}"))?;
    Ok((spawner, runtime))
}

/// What the command's runs gave so far, for its report.
#[derive(Default)]
struct Runs {
    exits: Vec<Exit>,
    /// One summary line per run.
    lines: Vec<String>,
    records: Vec<RunRecord>,
    scenarios: Vec<crate::report::ScenarioInfo>,
    /// The runs' identity in the report (as a campaign's `config_hash`): their run files.
    config: Sha256,
}

impl Runs {
    /// Makes and judges run `k` (seed `--seed` + `k`, in `run-<k+1>/` when there are several).
    ///
    /// # Errors
    /// The exit of the command when it must stop: bad input.
    fn make(
        &mut self,
        args: &LiveArgs,
        k: u64,
        spawner: &Spawner,
        runtime: &tokio::runtime::Runtime,
    ) -> Result<(), Exit> {
        let mut request = args.request.clone();
        request.seed = args.request.seed.wrapping_add(k);
        let out = if args.runs > 1 {
            args.out.join(format!("run-{}", k + 1))
        } else {
            args.out.clone()
        };
        let (resolved, _, _) = resolve(args.backend, &request).map_err(|error| {
            let (LiveError::BadInput(error) | LiveError::Harness(error)) = error;
            eprintln!("error: {error}");
            Exit::BadInput
        })?;
        self.add_config(&resolved, args.backend);
        let replay = replay_command(&request, args.backend, &out);
        let wall = crate::campaign::stopwatch::Stopwatch::start();
        let exit = match one_run(args, &request, &out, spawner, runtime) {
            Ok(judged) => {
                self.lines
                    .push(format!("seed {}: {}", request.seed, judged.verdict.line));
                self.records.push(super::report::record(
                    &judged.run,
                    &judged.history,
                    &judged.verdict,
                    wall.elapsed_ms(),
                    replay,
                ));
                judged.verdict.exit
            }
            Err(LiveError::BadInput(error)) => {
                eprintln!("error: {error}");
                return Err(Exit::BadInput);
            }
            Err(LiveError::Harness(error)) => {
                eprintln!("error: seed {}: {error}", request.seed);
                self.lines
                    .push(format!("seed {}: harness error: {error}", request.seed));
                self.records.push(RunRecord::harness_error(
                    &resolved.scenario,
                    request.seed,
                    &error,
                    replay,
                ));
                Exit::HarnessError
            }
        };
        self.exits.push(exit);
        Ok(())
    }

    /// Adds run file `resolved` on `backend` to the runs' identity, and its scenario to the
    /// report's when new.
    fn add_config(&mut self, resolved: &RunFile, backend: Backend) {
        self.config.update(resolved.to_json().as_bytes());
        self.config.update(backend_name(backend).as_bytes());
        if !self.scenarios.iter().any(|s| s.name == resolved.scenario) {
            self.scenarios.push(crate::report::ScenarioInfo {
                name: resolved.scenario.clone(),
                about: format!("live mode ({} backend)", backend_name(backend)),
                coverage: Vec::new(),
                violate: resolved.expect.violate.clone(),
                coverage_within_seeds: std::collections::BTreeMap::new(),
                left_out: None,
            });
        }
    }

    /// Writes the report of the runs and prints the summary of several; returns the worst
    /// exit (a harness error when the report could not be written).
    fn report(self, args: &LiveArgs) -> Exit {
        let worst = Exit::worst(self.exits.iter().copied());
        let mutant = args.request.mutant.map(|m| m.name().to_owned());
        let config_hash = self.config.finalize()[..8]
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        let report = super::report::write(
            &args.out,
            self.records,
            self.scenarios,
            args.request.seed,
            mutant,
            config_hash,
        );
        if args.runs > 1 {
            for line in &self.lines {
                println!("{line}");
            }
            match report {
                Ok(verdict) => println!(
                    "{verdict} — exit {worst} — report: {}",
                    args.out.join("report.md").display()
                ),
                Err(error) => {
                    eprintln!("error: the report: {error}");
                    return Exit::worst([worst, Exit::HarnessError]);
                }
            }
        } else if let Err(error) = report {
            eprintln!("error: the report: {error}");
            return Exit::worst([worst, Exit::HarnessError]);
        }
        worst
    }
}

/// One run made and judged.
struct Judged {
    run: RunFile,
    history: History,
    verdict: judge::RunVerdict,
}

/// Why a run could not be made.
#[derive(Debug)]
enum LiveError {
    /// Bad flags, scenario or schedule (exit 2).
    BadInput(String),
    /// The harness failed (exit 3).
    Harness(String),
}

fn harness(context: &str) -> impl Fn(std::io::Error) -> LiveError + '_ {
    move |e| LiveError::Harness(format!("{context}: {e}"))
}

/// A host's running process and its history.
struct HostState {
    proc: Option<Proc>,
    /// Boots (or incarnations) started so far.
    boots: u64,
    /// Stopped with SIGSTOP.
    paused: bool,
    /// Killed by the nemesis and not started again.
    crashed: bool,
    /// Exited by itself at this true time (a replica is started again a second later).
    exited_at: Option<Duration>,
}

/// Everything one run owns.
struct Run<'a> {
    out: PathBuf,
    run_file: PathBuf,
    truth: TrueClock,
    spawner: &'a Spawner,
    runtime: &'a tokio::runtime::Runtime,
    backend: Backend,
    nemesis: LineFile,
    hosts: BTreeMap<String, HostState>,
    /// Ended processes, for the merge.
    ended: Vec<ProcessFile>,
    /// Service host → its address now.
    addresses: BTreeMap<String, SocketAddr>,
    /// (client, service) → link.
    links: BTreeMap<(String, String), Link>,
    clocks: BTreeMap<String, HostClock>,
    faketime: Option<PathBuf>,
    replicas: u32,
    seed: u64,
    /// How long a child may take to stop after SIGTERM ([`processes::stop_bound`]).
    stop_bound: Duration,
    /// A mutant planted in the lease backend the replicas reach (flock, etcd) rather than in
    /// the run file's world: each replica takes it with `--mutant` ([`resolve`]).
    lease_mutant: Option<Mutant>,
}

/// `request` resolved to its run file and world config, and the mutant the replicas take
/// with `--mutant` instead of from the run file. The run file's world is the simulated gRPC
/// one, which refuses a mutant of another backend (it would change nothing there); a flock
/// or etcd mutant is planted in the `FlockLease` or `EtcdLease` each replica builds, so the
/// run file names none and the history's config line (from the returned config) names it.
///
/// # Errors
/// `BadInput` when the request does not resolve.
fn resolve(
    backend: Backend,
    request: &RunRequest,
) -> Result<(RunFile, WorldConfig, Option<Mutant>), LiveError> {
    let lease_mutant = request
        .mutant
        .filter(|m| backend != Backend::Grpc && m.backend() == Some(backend_name(backend)));
    let mut in_world = request.clone();
    if lease_mutant.is_some() {
        in_world.mutant = None;
    }
    let run = in_world
        .resolve()
        .map_err(|e| LiveError::BadInput(e.to_string()))?;
    let mut config = run
        .world_config()
        .map_err(|e| LiveError::BadInput(e.to_string()))?;
    if lease_mutant.is_some() {
        config.mutant = lease_mutant;
    }
    Ok((run, config, lease_mutant))
}

fn one_run(
    args: &LiveArgs,
    request: &RunRequest,
    out: &Path,
    spawner: &Spawner,
    runtime: &tokio::runtime::Runtime,
) -> Result<Judged, LiveError> {
    let (run, config, lease_mutant) = resolve(args.backend, request)?;
    check_backend(args.backend, &run)?;
    let plan = plan_faults(args.backend, request, &run, &config)?;
    let faketime = if plan.clocks.is_empty() {
        None
    } else {
        Some(super::faketime::library().map_err(LiveError::BadInput)?)
    };
    prepare_out(out)?;
    let run_file = out.join("run.json");
    run.save(&run_file)
        .map_err(|e| LiveError::Harness(e.to_string()))?;
    crate::sim::runner::write_inputs(out, &run.schedule, script_of(&run))
        .map_err(|e| LiveError::Harness(e.to_string()))?;
    let timeout = args.timeout.unwrap_or_else(|| {
        config.duration + Duration::from_micros(live_bound(&run, true)) + Duration::from_secs(60)
    });
    announce(args.backend, &run, &config, &plan, out, timeout);

    let truth = TrueClock::start();
    let nemesis = orchestrator_history(out, &config, args.backend)?;
    let mut live = Run {
        out: out.to_owned(),
        run_file,
        truth,
        spawner,
        runtime,
        backend: args.backend,
        nemesis,
        hosts: BTreeMap::new(),
        ended: Vec::new(),
        addresses: BTreeMap::new(),
        links: BTreeMap::new(),
        clocks: plan.clocks.clone(),
        faketime,
        replicas: run.world.replicas,
        seed: run.seed,
        stop_bound: processes::stop_bound(config.ttl),
        lease_mutant,
    };
    for dropped in &plan.dropped {
        println!("live: dropped (no real counterpart): {dropped}");
        live.record("all", NemesisAction::Dropped, None, Some(dropped.clone()));
    }
    let outcome = live.drive(&run, &plan, timeout);
    let stopped = live.stop_all();
    outcome?;
    stopped?;

    let (history, cut_off) = merge_history(out, &live.ended)?;
    let verdict = judge::judge_run(&history, &run.expect.violate);
    let judged = Judged {
        run,
        history,
        verdict,
    };
    write_result(&judged, args.backend, request, &config, out, cut_off)?;
    Ok(judged)
}

/// Refuses a run live mode cannot make with `backend`: a simulated API server, or etcd
/// missing from this build or machine. What the build and machine lack is said before the
/// schedule's needs (libfaketime): the backend is the first thing the command line chose.
fn check_backend(backend: Backend, run: &RunFile) -> Result<(), LiveError> {
    if run.world.backend != crate::sim::runfile::BackendSpec::Grpc {
        return Err(LiveError::BadInput(format!(
            "the run's world backend is `{}`: live mode runs the gRPC services, flock or etcd \
             (--backend), not a simulated API server",
            run.world.backend.name()
        )));
    }
    if backend == Backend::Etcd && !cfg!(feature = "etcd") {
        return Err(LiveError::BadInput(
            "--backend etcd: this leasesim was built without the `etcd` feature; rebuild with \
             `cargo build --release --features etcd` (or install with `--features etcd`)"
                .into(),
        ));
    }
    if backend == Backend::Etcd && which(super::etcd::ETCD_BINARY).is_none() {
        return Err(LiveError::BadInput(
            "--backend etcd: no `etcd` on PATH (apt-get install etcd-server)".into(),
        ));
    }
    Ok(())
}

/// The nemesis plan of `run`'s schedule on `backend`'s hosts (docs/live.md).
fn plan_faults(
    backend: Backend,
    request: &RunRequest,
    run: &RunFile,
    config: &WorldConfig,
) -> Result<super::nemesis::Plan, LiveError> {
    let lease_host = match backend {
        Backend::Grpc => Some(hosts::LEASE),
        Backend::Flock => None,
        Backend::Etcd => Some(super::etcd::HOST),
    };
    let drawn = request.schedule.is_none() && (request.scenario.is_none() || run.drawn.is_some());
    super::nemesis::plan(
        &run.schedule,
        config.duration.as_millis() as u64,
        run.world.replicas,
        lease_host,
        drawn,
    )
    .map_err(LiveError::BadInput)
}

/// Prints the run's seed, description and live set-up before it starts.
fn announce(
    backend: Backend,
    run: &RunFile,
    config: &WorldConfig,
    plan: &super::nemesis::Plan,
    out: &Path,
    timeout: Duration,
) {
    println!("SEED={}", run.seed);
    print!("{}", run.describe_on(backend_name(backend), out, timeout));
    println!(
        "live: backend {}, {} replicas, {} s, heal at {} ms, out {}",
        backend_name(backend),
        run.world.replicas,
        config.duration.as_secs(),
        plan.heal_at_ms,
        out.display()
    );
}

/// The orchestrator's own history file, `processes/orchestrator.jsonl`, begun with the config
/// line (the gRPC lease service is the authority; the others have none the history sees).
fn orchestrator_history(
    out: &Path,
    config: &WorldConfig,
    backend: Backend,
) -> Result<LineFile, LiveError> {
    let nemesis = LineFile::create(&out.join("processes/orchestrator.jsonl"))
        .map_err(harness("orchestrator history"))?;
    let mut config_line = crate::sim::config::config_line(config);
    config_line.authority = match backend {
        Backend::Grpc => Some(hosts::LEASE.to_owned()),
        _ => None,
    };
    nemesis
        .append(&Line::Config(config_line))
        .map_err(harness("orchestrator history"))?;
    Ok(nemesis)
}

/// Merges the orchestrator's and the `ended` processes' files into `history.jsonl` (etcd
/// writes none), saying what was torn or missing; returns the history and how many of its
/// operations were cut off.
fn merge_history(out: &Path, ended: &[ProcessFile]) -> Result<(History, usize), LiveError> {
    let written: Vec<ProcessFile> = ended
        .iter()
        .filter(|p| p.host != super::etcd::HOST)
        .cloned()
        .collect();
    let merged = merge_files(&out.join("processes/orchestrator.jsonl"), &written)
        .map_err(|e| LiveError::Harness(e.to_string()))?;
    for (path, bytes) in &merged.torn {
        println!(
            "live: {}: a torn last line ({bytes} bytes, its process was killed while writing \
             it) dropped",
            path.display()
        );
    }
    for path in &merged.missing {
        println!(
            "live: {}: no history file (its process was killed before it made one)",
            path.display()
        );
    }
    let history = History::from_lines(
        out.join("history.jsonl").display().to_string(),
        merged.lines,
    );
    crate::input::replace(&out.join("history.jsonl"), history.to_jsonl().as_bytes())
        .map_err(|e| LiveError::Harness(e.to_string()))?;
    // Every replica invokes the lease at its start: a history without one operation is a
    // run that never ran, never a clean one.
    if history.ops().next().is_none() {
        return Err(LiveError::Harness(format!(
            "no replica recorded an operation: see the replicas' logs in {}",
            out.join("logs").display()
        )));
    }
    Ok((history, merged.cut_off))
}

/// Writes the run's `result.json` and prints its summary, the replay command and the verdict.
fn write_result(
    judged: &Judged,
    backend: Backend,
    request: &RunRequest,
    config: &WorldConfig,
    out: &Path,
    cut_off: usize,
) -> Result<(), LiveError> {
    let Judged {
        run,
        history,
        verdict,
    } = judged;
    let ended_us = history.phase_at_us(Phase::RunEnded).unwrap_or(0);
    let result = ResultFile {
        v: RESULT_VERSION,
        verdict: verdict.line.clone(),
        exit_code: verdict.exit.code(),
        checks: crate::report::checks::check_records(
            &verdict.judgement,
            &run.expect.violate,
            history,
        ),
        drawn: run.drawn.clone(),
        run: RunResult {
            seed: run.seed,
            replicas: run.world.replicas,
            duration_ms: config.duration.as_millis() as u64,
            ended_ms: ended_us / 1_000,
            schedule: run.schedule.clone(),
            faults: run.schedule.faults.len(),
            script: script_of(run).map(|_| "script.json".to_owned()),
            history_lines: history.lines().len(),
            operations: history.ops().count(),
            replay: replay_command(request, backend, out),
            scenario: run.scenario_path.clone(),
        },
    };
    crate::sim::runner::write_result(out, &result)
        .map_err(|e| LiveError::Harness(e.to_string()))?;
    println!(
        "ran {:.1} s of true time: {} operations ({} cut off), {} history lines in {}",
        ended_us as f64 / 1e6,
        result.run.operations,
        cut_off,
        result.run.history_lines,
        out.display()
    );
    println!("again: {}", result.run.replay);
    print!("{}", verdict.text);
    println!("{}", verdict.final_line());
    Ok(())
}

/// Refuses a `--mutant` the run's processes would not plant, before any of them starts:
/// one of another backend than `--backend` ([`crate::mutants::check_planted_in`]).
fn check_mutant(args: &LiveArgs) -> Result<(), String> {
    let Some(mutant) = args.request.mutant else {
        return Ok(());
    };
    let backend = backend_name(args.backend);
    crate::mutants::check_planted_in(mutant, backend).map_err(|refusal| {
        let hint = if mutant.backend() == Some("grpc") {
            "; use --backend grpc"
        } else {
            ""
        };
        format!("--mutant {}: {refusal}{hint}", mutant.name())
    })?;
    Ok(())
}

fn backend_name(backend: Backend) -> &'static str {
    match backend {
        Backend::Grpc => "grpc",
        Backend::Flock => "flock",
        Backend::Etcd => "etcd",
    }
}

fn script_of(run: &RunFile) -> Option<&crate::sim::script::Script> {
    match &run.workload {
        crate::sim::runfile::RunWorkload::Script(script) => Some(script),
        crate::sim::runfile::RunWorkload::Generated(_)
        | crate::sim::runfile::RunWorkload::Plan(_) => None,
    }
}

/// The command that makes this run again (a new live run: live runs are not deterministic).
fn replay_command(request: &RunRequest, backend: Backend, out: &Path) -> String {
    let mut words: Vec<String> = request
        .args()
        .iter()
        .map(|a| crate::sim::runfile::shell_word(a))
        .collect();
    if backend != Backend::Grpc {
        words.push(format!("--backend {}", backend_name(backend)));
    }
    words.push(format!(
        "--out {}",
        crate::sim::runfile::shell_word(&out.display().to_string())
    ));
    format!("leasesim live {}", words.join(" "))
}

/// LIVE's bound after the heal, µs, as the world computes it for its liveness phase.
fn live_bound(run: &RunFile, authority_restarted: bool) -> u64 {
    crate::sim::config::config_line(&run.world_config_unchecked())
        .live_bound_us(authority_restarted)
}

/// Locks `out` ([`crate::input::OutputLock`]) and removes the report an earlier `live` left
/// there, so a run stopped midway never leaves an earlier run's verdict beside its own (N7).
fn lock_out(out: &Path) -> Result<crate::input::OutputLock, String> {
    let lock = crate::sim::runner::lock_out(out).map_err(|e| e.to_string())?;
    crate::input::remove_stale(out, &crate::report::RENDERED_FILES)
        .and_then(|()| crate::input::remove_stale(out, &crate::report::DATA_FILES))
        .map_err(|e| format!("cannot remove an earlier run's report: {e}"))?;
    Ok(lock)
}

/// Makes `out`'s folders, removing what an earlier live run left there.
fn prepare_out(out: &Path) -> Result<(), LiveError> {
    std::fs::create_dir_all(out).map_err(|e| {
        LiveError::BadInput(format!(
            "--out {}: cannot create that folder: {e}",
            out.display()
        ))
    })?;
    for dir in ["processes", "logs", "data", "leases"] {
        let path = out.join(dir);
        if path.exists() {
            std::fs::remove_dir_all(&path).map_err(harness("an earlier run's files"))?;
        }
    }
    crate::sim::runner::clear_outputs(out).map_err(|e| LiveError::Harness(e.to_string()))?;
    for dir in ["processes", "logs", "data"] {
        std::fs::create_dir_all(out.join(dir)).map_err(harness("the run's folders"))?;
    }
    Ok(())
}

fn which(program: &str) -> Option<PathBuf> {
    std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|dir| dir.join(program))
            .find(|p| p.is_file())
    })
}

impl Run<'_> {
    pub(super) fn now(&self) -> Duration {
        self.truth.now()
    }

    /// Writes a nemesis line and prints the progress line.
    pub(super) fn record(
        &self,
        host: &str,
        action: NemesisAction,
        peer: Option<&str>,
        detail: Option<String>,
    ) {
        let at = self.now();
        let peer_text = peer.map(|p| format!(" ↔ {p}")).unwrap_or_default();
        let detail_text = detail
            .as_deref()
            .map(|d| format!(" ({d})"))
            .unwrap_or_default();
        println!(
            "  {:>8.3} s nemesis: {action} {host}{peer_text}{detail_text}",
            at.as_secs_f64()
        );
        let _ = self.nemesis.append(&Line::Nemesis(NemesisLine {
            at_us: micros(at),
            host: host.to_owned(),
            action,
            peer: peer.map(str::to_owned),
            detail,
        }));
    }

    pub(super) fn phase(&self, name: Phase) -> Result<(), LiveError> {
        self.nemesis
            .append(&Line::Phase(PhaseLine {
                name,
                at_us: micros(self.now()),
            }))
            .map_err(harness("orchestrator history"))
    }

    pub(super) fn services(&self) -> Vec<String> {
        let mut services = Vec::new();
        match self.backend {
            Backend::Grpc => services.push(hosts::LEASE.to_owned()),
            Backend::Etcd => services.push(super::etcd::HOST.to_owned()),
            Backend::Flock => {}
        }
        services.push(hosts::LEDGER.to_owned());
        services
    }

    pub(super) fn replica_names(&self) -> Vec<String> {
        (1..=self.replicas).map(hosts::replica).collect()
    }
}

/// FNV-1a of `text`: a link's own seed for its flaps and jitter.
fn fnv1a(text: &str) -> u64 {
    text.bytes().fold(0xcbf2_9ce4_8422_2325, |hash, byte| {
        (hash ^ u64::from(byte)).wrapping_mul(0x0100_0000_01b3)
    })
}
