//! `leasesim live`: one or more live runs (the contract is in [`crate::live`]). Each run
//! resolves its flags to a run file as `leasesim run` does, starts the services, one proxy
//! link per (replica, service) pair and the replicas, applies the nemesis in true time, heals,
//! runs the liveness phase, stops everything, merges the per-process files into
//! `history.jsonl` and judges it with the same judge as `leasesim run` (`result.json`, the
//! verdict line, the same exit codes). With `--runs N` (N > 1) each run goes into
//! `OUT/run-K/` and the last line sums them up.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use super::lines::LineFile;
use super::merge::{ProcessFile, merge_files};
use super::nemesis::{Action, HostClock, LinkChange, Plan};
use super::process::DRIFT_ENV;
use super::proxy::{Link, LinkFaults};
use super::spawn::{Proc, Spawner, wait_for_address};
use super::target::LeaseTarget;
use super::truth::{EPOCH_ENV, TrueClock};
use crate::campaign::request::RunRequest;
use crate::campaign::single::{RESULT_VERSION, ResultFile};
use crate::check::judge;
use crate::exit::Exit;
use crate::history::{History, Line, NemesisLine, Phase, PhaseLine, hosts, micros};
use crate::sim::runfile::RunFile;
use crate::sim::runner::RunResult;

/// How long a service may take to print its address.
const START_BOUND: Duration = Duration::from_secs(10);
/// How long a process may take to stop after SIGTERM before it is SIGKILLed.
const STOP_BOUND: Duration = Duration::from_secs(5);
/// How long a replica that exited by itself stays down before it is started again (as the
/// world restarts a replica that shut down gracefully).
const SELF_STOPPED_RESTART: Duration = Duration::from_secs(1);
/// How often the orchestrator looks at its children between nemesis steps.
const TICK: Duration = Duration::from_millis(20);

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
    #[arg(long, value_parser = crate::serve::parse_duration)]
    pub timeout: Option<Duration>,
}

/// `leasesim live`: every run, its banner, progress and verdict printed; returns the exit
/// code (the worst of the runs', as DESIGN.md, "Exit codes", orders them).
pub fn main(args: LiveArgs) -> Exit {
    let spawner = match Spawner::start() {
        Ok(spawner) => spawner,
        Err(error) => {
            eprintln!("error: cannot start the spawner thread: {error}");
            return Exit::HarnessError;
        }
    };
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(error) => {
            eprintln!("error: cannot start the async runtime: {error}");
            return Exit::HarnessError;
        }
    };
    let mut exits = Vec::new();
    let mut lines = Vec::new();
    let mut records = Vec::new();
    let mut scenarios: Vec<crate::report::ScenarioInfo> = Vec::new();
    for k in 0..args.runs {
        let mut request = args.request.clone();
        request.seed = args.request.seed.wrapping_add(k);
        let out = if args.runs > 1 {
            args.out.join(format!("run-{}", k + 1))
        } else {
            args.out.clone()
        };
        let resolved = match request.resolve() {
            Ok(run) => run,
            Err(error) => {
                eprintln!("error: {error}");
                return Exit::BadInput;
            }
        };
        if !scenarios.iter().any(|s| s.name == resolved.scenario) {
            scenarios.push(crate::report::ScenarioInfo {
                name: resolved.scenario.clone(),
                about: format!("live mode ({} backend)", backend_name(args.backend)),
                coverage: Vec::new(),
                violate: resolved.expect.violate.clone(),
            });
        }
        let replay = replay_command(&request, args.backend, &out);
        let wall = crate::campaign::stopwatch::Stopwatch::start();
        let exit = match one_run(&args, &request, &out, &spawner, &runtime) {
            Ok(judged) => {
                lines.push(format!("seed {}: {}", request.seed, judged.verdict.line));
                records.push(super::report::record(
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
                return Exit::BadInput;
            }
            Err(LiveError::Harness(error)) => {
                eprintln!("error: seed {}: {error}", request.seed);
                lines.push(format!("seed {}: harness error: {error}", request.seed));
                records.push(super::report::harness_error(
                    &resolved.scenario,
                    request.seed,
                    error,
                    replay,
                ));
                Exit::HarnessError
            }
        };
        exits.push(exit);
    }
    let worst = Exit::worst(exits.iter().copied());
    let mutant = args.request.mutant.map(|m| m.name().to_owned());
    let report = super::report::write(&args.out, records, scenarios, args.request.seed, mutant);
    if args.runs > 1 {
        for line in &lines {
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
}

fn one_run(
    args: &LiveArgs,
    request: &RunRequest,
    out: &Path,
    spawner: &Spawner,
    runtime: &tokio::runtime::Runtime,
) -> Result<Judged, LiveError> {
    let run = request
        .resolve()
        .map_err(|e| LiveError::BadInput(e.to_string()))?;
    let config = run
        .world_config()
        .map_err(|e| LiveError::BadInput(e.to_string()))?;
    if run.world.backend != crate::sim::runfile::BackendSpec::Grpc {
        return Err(LiveError::BadInput(format!(
            "the run's world backend is `{}`: live mode runs the gRPC services, flock or etcd \
             (--backend), not a simulated API server",
            run.world.backend.name()
        )));
    }
    let lease_host = match args.backend {
        Backend::Grpc => Some(hosts::LEASE),
        Backend::Flock => None,
        Backend::Etcd => Some("etcd"),
    };
    let drawn = request.schedule.is_none() && (request.scenario.is_none() || run.drawn.is_some());
    let duration_ms = config.duration.as_millis() as u64;
    let plan = super::nemesis::plan(
        &run.schedule,
        duration_ms,
        run.world.replicas,
        lease_host,
        drawn,
    )
    .map_err(LiveError::BadInput)?;
    let faketime = if plan.clocks.is_empty() {
        None
    } else {
        Some(faketime_library().map_err(LiveError::BadInput)?)
    };
    if args.backend == Backend::Etcd && which(super::etcd::ETCD_BINARY).is_none() {
        return Err(LiveError::BadInput(
            "--backend etcd: no `etcd` on PATH (apt-get install etcd-server)".into(),
        ));
    }

    prepare_out(out)?;
    let run_file = out.join("run.json");
    run.save(&run_file)
        .map_err(|e| LiveError::Harness(e.to_string()))?;
    crate::sim::runner::write_inputs(out, &run.schedule, script_of(&run))
        .map_err(|e| LiveError::Harness(e.to_string()))?;
    let timeout = args.timeout.unwrap_or_else(|| {
        config.duration + Duration::from_micros(live_bound(&run, true)) + Duration::from_secs(60)
    });

    println!("SEED={}", run.seed);
    print!("{}", run.describe(out, timeout));
    println!(
        "live: backend {}, {} replicas, {} s, heal at {} ms, out {}",
        backend_name(args.backend),
        run.world.replicas,
        config.duration.as_secs(),
        plan.heal_at_ms,
        out.display()
    );

    let truth = TrueClock::start();
    let nemesis = LineFile::create(&out.join("processes/orchestrator.jsonl"))
        .map_err(harness("orchestrator history"))?;
    let mut config_line = crate::sim::config::config_line(&config);
    config_line.authority = match args.backend {
        Backend::Grpc => Some(hosts::LEASE.to_owned()),
        _ => None,
    };
    nemesis
        .append(&Line::Config(config_line))
        .map_err(harness("orchestrator history"))?;

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
    };
    for dropped in &plan.dropped {
        println!("live: dropped (no real counterpart): {dropped}");
        live.record("all", "dropped", None, Some(dropped.clone()));
    }
    let outcome = live.drive(&run, &plan, timeout);
    let stopped = live.stop_all();
    outcome?;
    stopped?;

    let merged = merge_files(&out.join("processes/orchestrator.jsonl"), &live.ended)
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
    std::fs::write(out.join("history.jsonl"), history.to_jsonl())
        .map_err(harness("history.jsonl"))?;

    let verdict = judge::judge_run(&history, &run.expect.violate);
    let ended_us = history.phase_at_us(Phase::RunEnded).unwrap_or(0);
    let result = ResultFile {
        v: RESULT_VERSION,
        verdict: verdict.line.clone(),
        exit_code: verdict.exit.code(),
        checks: crate::campaign::execute::check_records(&verdict.judgement, &run.expect, &history),
        drawn: run.drawn.clone(),
        run: RunResult {
            seed: run.seed,
            replicas: run.world.replicas,
            duration_ms,
            ended_ms: ended_us / 1_000,
            schedule: run.schedule.clone(),
            faults: run.schedule.faults.len(),
            script: script_of(&run).map(|_| "script.json".to_owned()),
            history_lines: history.lines().len(),
            operations: history.ops().count(),
            replay: replay_command(request, args.backend, out),
            scenario: run.scenario_path.clone(),
        },
    };
    crate::sim::runner::write_result(out, &result)
        .map_err(|e| LiveError::Harness(e.to_string()))?;
    println!(
        "ran {:.1} s of true time: {} operations ({} cut off), {} history lines in {}",
        ended_us as f64 / 1e6,
        result.run.operations,
        merged.cut_off,
        result.run.history_lines,
        out.display()
    );
    println!("again: {}", result.run.replay);
    print!("{}", verdict.text);
    println!("{}", verdict.final_line());
    Ok(Judged {
        run,
        history,
        verdict,
    })
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
        crate::sim::runfile::RunWorkload::Generated(_) => None,
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

/// libfaketime's library, found where Debian's `faketime` package puts it (any
/// architecture), or `LEASESIM_LIBFAKETIME`.
///
/// # Errors
/// Not installed: the message says how to install it.
pub fn faketime_library() -> Result<PathBuf, String> {
    if let Some(path) = std::env::var_os("LEASESIM_LIBFAKETIME") {
        let path = PathBuf::from(path);
        return if path.is_file() {
            Ok(path)
        } else {
            Err(format!(
                "LEASESIM_LIBFAKETIME={}: no such file",
                path.display()
            ))
        };
    }
    let mut candidates = vec![PathBuf::from(
        "/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1",
    )];
    if let Ok(entries) = std::fs::read_dir("/usr/lib") {
        for entry in entries.flatten() {
            candidates.push(entry.path().join("faketime/libfaketime.so.1"));
        }
    }
    candidates.push(PathBuf::from("/usr/lib/faketime/libfaketime.so.1"));
    candidates.push(PathBuf::from("/usr/local/lib/faketime/libfaketime.so.1"));
    candidates.into_iter().find(|p| p.is_file()).ok_or_else(|| {
        "the schedule drifts or steps a clock, which live mode does with libfaketime, and \
         libfaketime.so.1 is not installed: `apt-get install faketime` (or set \
         LEASESIM_LIBFAKETIME to the library)"
            .to_owned()
    })
}

fn which(program: &str) -> Option<PathBuf> {
    std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|dir| dir.join(program))
            .find(|p| p.is_file())
    })
}

impl Run<'_> {
    fn now(&self) -> Duration {
        self.truth.now()
    }

    /// Writes a nemesis line and prints the progress line.
    fn record(&self, host: &str, action: &str, peer: Option<&str>, detail: Option<String>) {
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
            action: action.to_owned(),
            peer: peer.map(str::to_owned),
            detail,
        }));
    }

    fn phase(&self, name: Phase) -> Result<(), LiveError> {
        self.nemesis
            .append(&Line::Phase(PhaseLine {
                name,
                at_us: micros(self.now()),
            }))
            .map_err(harness("orchestrator history"))
    }

    fn services(&self) -> Vec<String> {
        let mut services = Vec::new();
        match self.backend {
            Backend::Grpc => services.push(hosts::LEASE.to_owned()),
            Backend::Etcd => services.push("etcd".to_owned()),
            Backend::Flock => {}
        }
        services.push(hosts::LEDGER.to_owned());
        services
    }

    fn replica_names(&self) -> Vec<String> {
        (1..=self.replicas).map(hosts::replica).collect()
    }

    /// The whole run up to the stop: services, links, replicas, the nemesis, the heal and
    /// the liveness phase.
    fn drive(&mut self, run: &RunFile, plan: &Plan, timeout: Duration) -> Result<(), LiveError> {
        for service in self.services() {
            self.start(&service)?;
        }
        for replica in self.replica_names() {
            for service in self.services() {
                let upstream = self.addresses[&service];
                let seed = self.seed ^ fnv1a(&format!("{replica}>{service}"));
                let link = self
                    .runtime
                    .block_on(Link::start(&replica, &service, upstream, seed))
                    .map_err(harness("a proxy link"))?;
                self.links.insert((replica.clone(), service), link);
            }
        }
        for replica in self.replica_names() {
            self.start(&replica)?;
        }
        let deadline = timeout;
        for step in &plan.steps {
            self.wait_until(Duration::from_millis(step.at_ms), deadline)?;
            self.apply(&step.action, &step.why)?;
        }
        self.wait_until(Duration::from_millis(plan.heal_at_ms), deadline)?;
        self.heal()?;
        self.phase(Phase::FaultsHealed)?;
        let healed = self.now();
        let restarted = self.hosts.get(hosts::LEASE).is_some_and(|h| h.boots > 1);
        let bound = Duration::from_micros(live_bound(run, restarted));
        let end = (healed + bound + Duration::from_millis(200))
            .max(run.world_config_unchecked().duration);
        println!(
            "  {:>8.3} s liveness phase until {:.3} s (LIVE's bound {} ms after the heal)",
            healed.as_secs_f64(),
            end.as_secs_f64(),
            bound.as_millis()
        );
        self.wait_until(end, deadline)?;
        Ok(())
    }

    /// Waits until true time `at`, restarting replicas that stopped by themselves.
    fn wait_until(&mut self, at: Duration, deadline: Duration) -> Result<(), LiveError> {
        loop {
            let now = self.now();
            if now >= deadline {
                return Err(LiveError::Harness(format!(
                    "the run did not end within --timeout {deadline:?}"
                )));
            }
            self.supervise()?;
            if now >= at {
                return Ok(());
            }
            #[allow(clippy::disallowed_methods)]
            std::thread::sleep(TICK.min(at - now));
        }
    }

    /// Notes children that exited by themselves; a replica is started again a second later.
    fn supervise(&mut self) -> Result<(), LiveError> {
        let now = self.now();
        let mut restart = Vec::new();
        let mut ended = Vec::new();
        for (host, state) in &mut self.hosts {
            if let Some(proc) = state.proc.as_mut()
                && let Some(status) = proc.exited()
            {
                println!(
                    "  {:>8.3} s {host} (boot {}) exited by itself: {status}; log {}",
                    now.as_secs_f64(),
                    proc.boot,
                    proc.log.display()
                );
                ended.push(process_file(proc, now, "exited"));
                state.proc = None;
                state.exited_at = Some(now);
            }
            if state.proc.is_none()
                && !state.crashed
                && host.starts_with(hosts::REPLICA_PREFIX)
                && state
                    .exited_at
                    .is_some_and(|at| now >= at + SELF_STOPPED_RESTART)
            {
                restart.push(host.clone());
            }
        }
        self.ended.extend(ended);
        for host in restart {
            self.start(&host)?;
        }
        Ok(())
    }

    /// Starts the next boot of `host`.
    fn start(&mut self, host: &str) -> Result<(), LiveError> {
        if self.hosts.get(host).is_some_and(|h| h.proc.is_some()) {
            return Ok(());
        }
        let boot = self.hosts.get(host).map_or(0, |h| h.boots);
        let history = self.out.join(format!("processes/{host}-{boot}.jsonl"));
        let log = self.out.join(format!("logs/{host}-{boot}.log"));
        let mut command = self.command(host, boot, &history)?;
        command.env(EPOCH_ENV, self.truth.epoch_text());
        let clock = self.clocks.get(host).copied().unwrap_or_default();
        command.env(DRIFT_ENV, clock.drift_ppm.to_string());
        if let Some(library) = &self.faketime
            && self.clocks.contains_key(host)
        {
            command.env("LD_PRELOAD", library);
            if clock.wall_steps {
                let spec = self.out.join(format!("data/{host}.faketime"));
                if !spec.exists() {
                    std::fs::write(&spec, "+0\n").map_err(harness("the faketime file"))?;
                }
                command
                    .env("FAKETIME_TIMESTAMP_FILE", &spec)
                    .env("FAKETIME_CACHE_DURATION", "1")
                    .env("FAKETIME_DONT_FAKE_MONOTONIC", "1");
            } else {
                let rate = 1.0 + clock.drift_ppm as f64 / 1e6;
                command.env("FAKETIME", format!("+0 x{rate:.6}"));
            }
        }
        let child = self.spawner.spawn(command, &log).map_err(harness(host))?;
        let mut proc = Proc::new(host, boot, history, log, child);
        let mut detail = format!("boot {boot}, pid {}", proc.pid());
        if self.services().iter().any(|s| s == host) {
            let addr = self.service_address(host, &mut proc)?;
            detail.push_str(&format!(", on {addr}"));
            self.addresses.insert(host.to_owned(), addr);
            for ((_, service), link) in &self.links {
                if service == host {
                    link.set_upstream(addr);
                }
            }
        }
        let state = self.hosts.entry(host.to_owned()).or_insert(HostState {
            proc: None,
            boots: 0,
            paused: false,
            crashed: false,
            exited_at: None,
        });
        state.proc = Some(proc);
        state.boots = boot + 1;
        state.paused = false;
        state.crashed = false;
        state.exited_at = None;
        if boot > 0 || !host.starts_with(hosts::REPLICA_PREFIX) {
            self.record(host, "start", None, Some(detail));
        }
        Ok(())
    }

    fn service_address(&self, host: &str, proc: &mut Proc) -> Result<SocketAddr, LiveError> {
        if host == "etcd" {
            let addr =
                self.addresses.get("etcd-client").copied().ok_or_else(|| {
                    LiveError::Harness("etcd's client port was not picked".into())
                })?;
            wait_for_port(addr, proc, START_BOUND).map_err(LiveError::Harness)?;
            return Ok(addr);
        }
        let text = wait_for_address(proc, START_BOUND).map_err(LiveError::Harness)?;
        text.parse()
            .map_err(|_| LiveError::Harness(format!("{host} printed `{text}`, not HOST:PORT")))
    }

    /// The command line of `host`'s boot `boot`.
    fn command(&mut self, host: &str, boot: u64, history: &Path) -> Result<Command, LiveError> {
        let exe = std::env::current_exe().map_err(harness("this executable"))?;
        let mut command = Command::new(&exe);
        if host == hosts::LEASE || host == hosts::LEDGER {
            let data = self.out.join("data").join(host);
            command
                .arg("serve")
                .arg(host)
                .arg("--listen")
                .arg("127.0.0.1:0")
                .arg("--data")
                .arg(&data)
                .arg("--run")
                .arg(&self.run_file)
                .arg("--history")
                .arg(history)
                .arg("--boot")
                .arg(boot.to_string());
        } else if host == "etcd" {
            let client = free_port().map_err(harness("a free port for etcd"))?;
            let peer = free_port().map_err(harness("a free port for etcd"))?;
            self.addresses.insert(
                "etcd-client".into(),
                SocketAddr::from(([127, 0, 0, 1], client)),
            );
            command = super::etcd::etcd_command(&self.out.join("data/etcd"), client, peer);
        } else {
            let lease = match self.backend {
                Backend::Grpc => LeaseTarget::Grpc(
                    self.links[&(host.to_owned(), hosts::LEASE.to_owned())]
                        .listen()
                        .to_string(),
                ),
                Backend::Etcd => LeaseTarget::Etcd(
                    self.links[&(host.to_owned(), "etcd".to_owned())]
                        .listen()
                        .to_string(),
                ),
                Backend::Flock => LeaseTarget::Flock(self.out.join("leases")),
            };
            if self.backend == Backend::Flock {
                std::fs::create_dir_all(self.out.join("leases")).map_err(harness("leases/"))?;
            }
            let ledger = self.links[&(host.to_owned(), hosts::LEDGER.to_owned())].listen();
            command
                .arg("replica")
                .arg("--run")
                .arg(&self.run_file)
                .arg("--name")
                .arg(host)
                .arg("--incarnation")
                .arg(boot.to_string())
                .arg("--lease")
                .arg(lease.to_string())
                .arg("--ledger")
                .arg(ledger.to_string())
                .arg("--history")
                .arg(history);
        }
        Ok(command)
    }

    /// The links a fault between `a` and `b` touches.
    fn links_between(&self, a: &str, b: &str) -> Vec<&Link> {
        self.links
            .iter()
            .filter(|((client, service), _)| {
                (client == a && service == b) || (client == b && service == a)
            })
            .map(|(_, link)| link)
            .collect()
    }

    fn apply(&mut self, action: &Action, reason: &str) -> Result<(), LiveError> {
        let why = Some(reason.to_owned());
        match action {
            Action::Stop(host) => {
                if let Some(state) = self.hosts.get_mut(host)
                    && let Some(proc) = &state.proc
                {
                    proc.signal(libc::SIGSTOP);
                    state.paused = true;
                }
                self.record(host, "sigstop", None, why);
            }
            Action::Cont(host) => {
                if let Some(state) = self.hosts.get_mut(host)
                    && let Some(proc) = &state.proc
                {
                    proc.signal(libc::SIGCONT);
                    state.paused = false;
                }
                self.record(host, "sigcont", None, why);
            }
            Action::Kill(host) => {
                if self.kill(host, "crash") {
                    self.record(host, "sigkill", None, why);
                }
            }
            Action::Start(host) => self.start(host)?,
            Action::Link { a, b, change } => {
                let links = self.links_between(a, b);
                for link in &links {
                    let client = link.client.clone();
                    link.update(|f| change_link(f, change, &client));
                }
                let name = match change {
                    LinkChange::Cut => "partition",
                    LinkChange::DropFrom(_) => "partition_one_way",
                    LinkChange::Hold | LinkChange::HoldFrom(_) => "hold",
                    LinkChange::Release | LinkChange::ReleaseFrom(_) => "release",
                    LinkChange::Latency(..) => "latency",
                    LinkChange::Flaps(_) => "link_flaps",
                };
                let detail = if links.is_empty() {
                    format!("{reason} — no proxied link between them")
                } else {
                    reason.to_owned()
                };
                self.record(a, name, Some(b), Some(detail));
            }
            Action::Isolate(host) => {
                for ((client, service), link) in &self.links {
                    if client == host || service == host {
                        link.update(|f| f.cut = true);
                    }
                }
                self.record(host, "partition", Some("all"), why);
            }
            Action::WallOffset { host, offset_ms } => {
                let spec = self.out.join(format!("data/{host}.faketime"));
                let sign = if *offset_ms < 0 { "-" } else { "+" };
                let text = format!("{sign}{:.3}\n", offset_ms.unsigned_abs() as f64 / 1e3);
                std::fs::write(&spec, text).map_err(harness("the faketime file"))?;
                self.record(
                    host,
                    "clock",
                    None,
                    Some(format!("wall offset {offset_ms} ms")),
                );
            }
            Action::HealAll => self.heal()?,
        }
        Ok(())
    }

    /// SIGKILLs `host`'s process; `false` if none was running.
    fn kill(&mut self, host: &str, why: &str) -> bool {
        let now = self.now();
        let Some(state) = self.hosts.get_mut(host) else {
            return false;
        };
        state.crashed = true;
        state.paused = false;
        let Some(mut proc) = state.proc.take() else {
            return false;
        };
        proc.kill();
        self.ended.push(process_file(&proc, now, why));
        true
    }

    /// Every link healed, every paused process continued, every crashed one started again.
    fn heal(&mut self) -> Result<(), LiveError> {
        for link in self.links.values() {
            link.heal();
        }
        let mut crashed = Vec::new();
        for (host, state) in &mut self.hosts {
            if state.paused
                && let Some(proc) = &state.proc
            {
                proc.signal(libc::SIGCONT);
                state.paused = false;
            }
            if state.crashed {
                crashed.push(host.clone());
            }
        }
        self.record("all", "heal", None, None);
        // Services first: a replica's links follow their new ports.
        crashed.sort_by_key(|h| h.starts_with(hosts::REPLICA_PREFIX));
        for host in crashed {
            self.start(&host)?;
        }
        Ok(())
    }

    /// Stops everything: replicas first (SIGTERM: a graceful shutdown), then the run-ended
    /// marker, then the services (the ledger writes its final ledger on SIGTERM).
    fn stop_all(&mut self) -> Result<(), LiveError> {
        let replicas = self.replica_names();
        let mut forced = Vec::new();
        for host in &replicas {
            if let Some(proc) = self.hosts.get_mut(host).and_then(|s| s.proc.as_mut()) {
                proc.signal(libc::SIGCONT);
                proc.signal(libc::SIGTERM);
            }
        }
        for host in &replicas {
            self.stop_one(host, &mut forced);
        }
        let phase = self.phase(Phase::RunEnded);
        for host in self.services() {
            self.stop_one(&host, &mut forced);
        }
        if !forced.is_empty() {
            println!(
                "live: SIGKILLed after {} s without stopping: {}",
                STOP_BOUND.as_secs(),
                forced.join(", ")
            );
        }
        let _ = self.nemesis.close();
        phase
    }

    fn stop_one(&mut self, host: &str, forced: &mut Vec<String>) {
        let Some(state) = self.hosts.get_mut(host) else {
            return;
        };
        if let Some(mut proc) = state.proc.take() {
            if !proc.stop(STOP_BOUND) {
                forced.push(host.to_owned());
            }
            let now = self.truth.now();
            self.ended.push(process_file(&proc, now, "run ended"));
        }
    }
}

fn change_link(faults: &mut LinkFaults, change: &LinkChange, client: &str) {
    match change {
        LinkChange::Cut => faults.cut = true,
        LinkChange::DropFrom(from) if from == client => faults.drop_up = true,
        LinkChange::DropFrom(_) => faults.drop_down = true,
        LinkChange::Hold => {
            faults.hold_up = true;
            faults.hold_down = true;
        }
        LinkChange::Release => {
            faults.hold_up = false;
            faults.hold_down = false;
        }
        LinkChange::HoldFrom(from) if from == client => faults.hold_up = true,
        LinkChange::HoldFrom(_) => faults.hold_down = true,
        LinkChange::ReleaseFrom(from) if from == client => faults.hold_up = false,
        LinkChange::ReleaseFrom(_) => faults.hold_down = false,
        LinkChange::Latency(latency, jitter) => {
            faults.latency = Duration::from_millis(*latency);
            faults.jitter = Duration::from_millis(*jitter);
        }
        LinkChange::Flaps(ppm) => faults.flap_ppm = *ppm,
    }
}

fn process_file(proc: &Proc, now: Duration, end: &str) -> ProcessFile {
    ProcessFile {
        host: proc.host.clone(),
        boot: proc.boot,
        path: proc.history.clone(),
        end_us: micros(now),
        end: end.to_owned(),
    }
}

fn free_port() -> std::io::Result<u16> {
    Ok(std::net::TcpListener::bind("127.0.0.1:0")?
        .local_addr()?
        .port())
}

// Live mode is real by design: a bounded wait for a real server's port.
#[allow(clippy::disallowed_types)]
fn wait_for_port(addr: SocketAddr, proc: &mut Proc, bound: Duration) -> Result<(), String> {
    let deadline = std::time::Instant::now() + bound;
    loop {
        if std::net::TcpStream::connect_timeout(&addr, Duration::from_millis(200)).is_ok() {
            return Ok(());
        }
        if proc.exited().is_some() || std::time::Instant::now() >= deadline {
            return Err(format!(
                "{} did not accept on {addr} within {bound:?}; {}",
                proc.host,
                proc.log.display()
            ));
        }
        #[allow(clippy::disallowed_methods)]
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// FNV-1a of `text`: a link's own seed for its flaps and jitter.
fn fnv1a(text: &str) -> u64 {
    text.bytes().fold(0xcbf2_9ce4_8422_2325, |hash, byte| {
        (hash ^ u64::from(byte)).wrapping_mul(0x0100_0000_01b3)
    })
}
