//! The command line, callable as a library: `leasesim` runs [`main`]; a targets binary
//! (docs/targets.md#the-targets-binary) runs [`main_with_targets`], the same command line with
//! its target backends known (`target:<name>` in a run file or a scenario's `[world]`). It
//! only parses arguments and calls into the library.

pub mod serve;

use std::process::ExitCode;

use std::path::PathBuf;
use std::time::Duration;

use crate::campaign::driver::CampaignOptions;
use crate::campaign::request::RunRequest;
use crate::exit::Exit;
use crate::lease::DurableLeaseConfig;
use crate::mutant::Mutant;
use crate::report::ReportError;
use crate::results::plan::{SeedPlan, Shard};
use crate::sim::config::WorldEngine;
use crate::sim::runfile::{BackendSpec, RunFile};
use crate::sim::runner::RunnerError;
use crate::time::parse_duration;
use crate::time::seconds_ms;
use clap::{Args, CommandFactory, FromArgMatches, Parser, Subcommand};
use serve::{LiveOptions, ServeError, ServeOptions, parse_grace_persist_interval, parse_ttl};
use std::path::Path;

/// Deterministic simulation and model checking for session leases with fencing tokens and
/// fenced single-writer journals.
///
/// Exit codes (every command): 0 clean · 1 safety violation · 2 bad input or usage ·
/// 3 harness error · 4 inconclusive · 5 liveness violation · 6 incomplete; and `flock`
/// alone exits 86 at a `--crash-at` point or at EOF while paused (see `flock --help`).
#[derive(Parser, Debug)]
#[command(name = "leasesim", version, about, long_about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// The main job: run every scenario in --sims over many seeds in parallel, judge each run
    /// (every invariant and both linearizability checks), shrink each failure to a minimal
    /// run (kept in --out/shrunk/ with its history and timeline.svg, and a mutant's beside its
    /// clean twin's), and write report.md, report.html (self-contained, the timelines inline),
    /// summary.json, junit.xml and results.jsonl into --out. With
    /// no arguments: every scenario in sims/ for a budget of about a minute, into
    /// reports/latest/. The last line printed is the verdict, its exit code and the report
    /// (`FAIL: 1 scenario violated EXCL — exit 1 — report: reports/latest/report.md`).
    /// Exit 0 clean, 1 an unexpected safety violation (or an expected one never seen, or a
    /// --mutants mutant that survived), 2 bad input or usage, 3 a harness error (hang or
    /// panic, naming its seed), 4 inconclusive, 5 a liveness violation, 6 incomplete (fewer
    /// runs than planned, a --budget that ran out before some scenario ran even once, or no
    /// run at all: never clean). An expected coverage event that no
    /// run of its scenario reached is a warning in the verdict line (`clean, with 1 warning:
    /// coverage event X never reached in Y`), never a failure: it does not change the exit
    /// code (reports/README.md says why). An event the scenario promises only within more
    /// seeds than ran is a note printed above the verdict line instead (`note: coverage
    /// event X not reached in 8 seeds of Y (expected within 64 seeds)`).
    Campaign(CampaignArgs),
    /// List the mutants (planted bugs) one per line: name, what is wrong, and what kills it
    /// (a scenario's check on a pinned seed, a conformance rule, or a loom suite).
    Mutants,
    /// Run one simulated world from a seed: replicas contend for sessions over simulated TCP
    /// with per-host clocks and the faults of a schedule. The flags (or the scenario) are
    /// first resolved to a run file, DIR/run.json; the seed and every option are printed from
    /// it, then the run writes DIR/history.jsonl, DIR/trace.jsonl, DIR/result.json and
    /// DIR/timeline.svg (a picture of the run: see --out), and
    /// prints the command that replays it (`leasesim replay DIR/run.json`, and the equivalent
    /// flags when there are any), the result of every check (a check with nothing to judge
    /// says `not judged` and why), and last the verdict with its exit code (`verdict: FAIL:
    /// EXCL violated — exit 1`), which result.json holds too, with every check's result and
    /// the fault schedule the world ran.
    ///
    /// Exit codes: 0 clean (only violations the run file expects, if any; checks not judged
    /// do not count) · 1 a safety violation, or a violation the run file expects that did
    /// not happen · 2 bad input or usage · 3 a harness error: a hang past --timeout, a panic,
    /// nondeterminism (--check-determinism) · 4 inconclusive: a linearizability search ran
    /// out of budget, nothing violated · 5 a liveness violation (LIVE) and no safety one.
    /// (6, incomplete, is for campaigns and reports only.)
    ///
    /// `leasesim mutants` lists the planted bugs --mutant can plant.
    Run(RunArgs),
    /// Replay a run file (`run.json`, written by every `run` and by the shrinker) exactly:
    /// same world, seed, faults and workload, so the same history bytes. Writes the same
    /// files as `run`, prints the same verdict line and exits with the same codes (see `run
    /// --help`); run files of older schema versions are read too.
    Replay(ReplayArgs),
    /// Run a remote service for real on TCP, with its durable state in a directory. Stops on
    /// SIGINT or SIGTERM.
    Serve {
        #[command(subcommand)]
        service: Service,
    },
    /// Check history files for linearizability, one verdict per file; a violation comes with
    /// an explanation (the operation that cannot be placed, the states possible before it, the
    /// longest valid prefix). etcd and kv read the Jepsen histories (without --model, each
    /// file's own is told from its first event line), ledger and lease our history.jsonl.
    /// Exit 0 all linearizable, 1 some not, 2 a file unreadable or
    /// malformed (named with its line), 4 a budget ran out with no violation found.
    Check(CheckArgs),
    /// Judge history files with every check, as `run` and `replay` judge their runs: each
    /// invariant and both linearizability checks (docs/checks.md), on a history.jsonl from
    /// `run`, `replay` or `live`, or from another tool that writes the format
    /// (docs/history.md). For each file: a line naming
    /// it with its operations, `run`'s line per check (a violation with its evidence, a check
    /// with nothing to judge says `not judged` and why) and its verdict line (`verdict: FAIL:
    /// FENCE, LEDGER violated — exit 1`); after several files, a line folding their exit
    /// codes. No violation is expected, whatever mutant the history's run planted.
    ///
    /// Exit codes (each file's as `run`'s, several folded by precedence 3, 2, 1, 5, 4): 0
    /// clean · 1 a safety violation · 2 bad input: a missing or unreadable file, a Jepsen
    /// history (judge it with `leasesim check`), a truncated or corrupt line (named with its
    /// line), a history without a config line or without a single operation · 3 a checker
    /// panicked · 4 inconclusive: a linearizability search ran out of --budget, nothing
    /// violated · 5 a liveness violation (LIVE) and no safety one.
    ///
    /// Example: `leasesim judge runs/tour/history.jsonl runs/tour-mutant/history.jsonl`.
    Judge(JudgeArgs),
    /// Render or merge campaign reports (report.md, report.html, summary.json, junit.xml)
    /// from a report folder's data files. Exits with the campaign's exit code; 2 on a missing or malformed
    /// data file (named with its line), records of runs the campaign never planned, or
    /// folders that are not distinct shards of one campaign; 6 (incomplete) when planned runs
    /// or shards are missing, or there are no runs, the report naming them.
    Report {
        #[command(subcommand)]
        command: ReportCommand,
    },
    /// One real process holding flock leases on command (the program the flock process
    /// tests spawn): reads `acquire SESSION`, `renew SESSION`, `release SESSION`,
    /// `fork exit SESSION`, `fork linger`, `go` and `quit` one per line on stdin and writes
    /// one JSON line per reply or event on stdout. Exit 0 at `quit` or EOF, 2 on a bad
    /// argument, a mutant of another backend or a directory FlockLease refuses (network file
    /// system), 86 at a `--crash-at` point or at EOF while paused (the decision is not
    /// finished).
    Flock(crate::lease::flock::driver::FlockArgs),
    /// Live mode: the same run as `leasesim run` (the same flags), on real processes of this
    /// machine — `serve lease`, `serve ledger` and N `replica` processes on 127.0.0.1, a
    /// nemesis of signals (pause, crash), a TCP proxy per link (partitions, holds, latency,
    /// resets) and libfaketime (clock drift and wall steps). Heals, runs the liveness phase,
    /// stops everything, merges the processes' files into OUT/history.jsonl, judges it with
    /// the same checkers and writes OUT/result.json. Prints a line per nemesis action and
    /// last the verdict with its exit code; exit codes as `run`'s (a fault with no real
    /// counterpart in a given schedule: 2).
    Live(crate::live::orchestrate::LiveArgs),
    /// One replica incarnation of a live run (started by `leasesim live`): the service layer
    /// running the run file's workload against a real lease backend (grpc://, flock:,
    /// etcd://) and the ledger service, recorded into --history. Needs
    /// LEASESIM_LIVE_EPOCH_NS (LEASESIM_LIVE_DRIFT_PPM optional). Prints `replica replica-K#I
    /// running (history FILE)`; on SIGTERM or SIGINT shuts down gracefully (the run's
    /// clean-up append, release) and exits 0. Exit 2 on a bad argument, run file or
    /// environment; 3 when the history cannot be written or the shutdown hangs.
    Replica(crate::live::replica::ReplicaArgs),
}

#[derive(Args, Debug)]
struct CampaignArgs {
    /// The folder of scenario files (`*.toml`).
    #[arg(long, value_name = "DIR", default_value = "sims")]
    sims: PathBuf,
    /// Seeds to run, `A..B` (B excluded) or one seed `N`; each against every scenario.
    #[arg(long, value_name = "A..B", conflicts_with = "budget")]
    seeds: Option<SeedPlan>,
    /// Wall-clock budget: seeds 0, 1, 2… against every scenario until it is spent (e.g. 10m).
    /// The default when --seeds is not given: 50s. `0s` is refused (exit 2); a budget that
    /// runs out before every scenario has run once (or before any run finished) makes an
    /// incomplete campaign (exit 6), never a clean one.
    #[arg(long, value_name = "DURATION", value_parser = humantime::parse_duration)]
    budget: Option<Duration>,
    /// Runs at once (default: the number of cores).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=256))]
    jobs: Option<u32>,
    /// Run only shard K of N (1-based): every N-th run from the K-th. With --mutants, the
    /// detection table is split the same way: the selected mutants in catalogue order
    /// (`leasesim mutants`), shard K/N detecting those at 0-based positions i with
    /// i % N == K-1 (each over every seed and scenario, as unsharded). Merge the shards'
    /// folders with `leasesim report merge`. A shard that owns no run (K greater than the
    /// campaign's runs) is refused (exit 2).
    #[arg(long, value_name = "K/N")]
    shard: Option<Shard>,
    /// The report folder.
    #[arg(long, value_name = "DIR", default_value = "reports/latest")]
    out: PathBuf,
    /// Wall-clock limit of one run; past it the run is a hang (a harness error naming its
    /// seed). Default: for each run, a minute plus 4 × what its simulated time takes here
    /// (10 ms per simulated second). A limit under 2 × that for some scenario's longest run
    /// is refused (exit 2), as such a run may merely be long. At least 100ms.
    #[arg(long, value_name = "DURATION", value_parser = humantime::parse_duration)]
    run_timeout: Option<Duration>,
    /// Keep the runs already in DIR/results.jsonl (an interrupted campaign) and run only the
    /// missing ones. Refused (exit 2) when DIR has no campaign.json or holds another
    /// campaign's results. A torn last line of results.jsonl (a write cut off by a kill) is
    /// dropped, saying so, and its run is made again.
    #[arg(long)]
    resume: bool,
    /// Do not shrink failing runs.
    #[arg(long)]
    no_shrink: bool,
    /// Copy each minimal failing run into SIMS/regressions/, which the test suite replays.
    #[arg(long)]
    save_regressions: bool,
    /// No progress bar (a line every 10 s instead).
    #[arg(long)]
    no_progress: bool,
    /// Plant this bug in every run (replacing the scenarios' own mutants).
    #[arg(long, value_name = "NAME", value_parser = Mutant::parse, conflicts_with = "mutants")]
    mutant: Option<Mutant>,
    /// After the campaign, detect these planted bugs (`all`, or names separated by commas):
    /// the report gains the detection table (in catalogue order, each mutant once) and the
    /// mutation score, and a mutant that survives fails the campaign (exit 1). `leasesim
    /// mutants` lists them. With --shard, each shard detects its share (see --shard).
    #[arg(long, value_name = "all|NAME,...", value_parser = parse_mutants)]
    mutants: Option<MutantList>,
    /// Seeds tried per mutant (each against every scenario) before it counts as survived:
    /// 1 to 1000 (the mutant phase has no budget of its own, so this bounds it).
    #[arg(long, value_name = "N", default_value_t = 20)]
    mutant_seeds: u64,
    /// Run every scenario on this backend (`grpc`, `kube`, `flock`, or `target:<name>` in the targets
    /// binary) in place of its `[world] backend`, e.g. the kube swarm profiles against a
    /// target. A scenario the backend cannot run as written (a schedule naming a fault it
    /// cannot take, a TTL it cannot grant) is refused (exit 2); a swarm profile draws only
    /// the kinds it can take, and the banner names the rest (docs/targets.md).
    #[arg(long, value_name = "NAME", value_parser = parse_backend)]
    backend: Option<BackendSpec>,
    /// Run every scenario's world on this engine: `turmoil` (the default) or `engine`, leasesim's own (docs/world.md#the-world-on-the-engine). Each
    /// run file records it, and the banner and replay lines name it.
    #[arg(long, value_name = "turmoil|engine", value_parser = parse_engine)]
    engine: Option<WorldEngine>,
}

/// `--backend`'s value: a backend's name as run files spell it.
fn parse_backend(name: &str) -> Result<BackendSpec, String> {
    BackendSpec::try_from(name.to_owned())
}

/// `--engine`'s value: `turmoil` or `engine` ([`WorldEngine::from_name`]).
fn parse_engine(name: &str) -> Result<WorldEngine, String> {
    WorldEngine::from_name(name)
        .ok_or_else(|| format!("unknown engine `{name}`, expected `turmoil` or `engine`"))
}

/// The mutants of `--mutants`.
#[derive(Clone, Debug)]
struct MutantList(Vec<Mutant>);

/// `all` or comma-separated mutant names.
fn parse_mutants(text: &str) -> Result<MutantList, String> {
    if text == "all" {
        return Ok(MutantList(Mutant::ALL.to_vec()));
    }
    text.split(',')
        .map(|name| Mutant::parse(name.trim()))
        .collect::<Result<Vec<_>, _>>()
        .map(MutantList)
}

#[derive(Subcommand, Debug)]
enum ReportCommand {
    /// Render DIR/report.md, DIR/report.html, DIR/summary.json and DIR/junit.xml from
    /// DIR/campaign.json, DIR/results.jsonl, DIR/shrunk.jsonl and DIR/mutants.jsonl (never
    /// re-runs anything). Prints the verdict line a campaign prints last (`clean — exit 0 —
    /// report: DIR/report.md`).
    Render {
        /// The report folder.
        #[arg(value_name = "DIR")]
        dir: PathBuf,
    },
    /// Merge the report folders of a campaign's shards into one (runs deduplicated by
    /// scenario and seed, detection tables of --mutants unioned in catalogue order, minimal
    /// run files copied) and render it, printing the verdict line as `render` does. A mutant
    /// detected by two shards is refused (exit 2) unless --force, which keeps the first
    /// folder's row.
    Merge {
        /// The shards' report folders.
        #[arg(value_name = "DIR", required = true)]
        dirs: Vec<PathBuf>,
        /// The merged report folder.
        #[arg(long, value_name = "DIR")]
        out: PathBuf,
        /// Merge even folders whose git commit, config hash or Cargo.lock hash differ, that
        /// are not distinct shards, or whose detection tables share a mutant (the first
        /// folder given with a run or a mutant keeps it).
        #[arg(long)]
        force: bool,
    },
}

/// The linearizability search's budget, as `check` and `judge` take it.
#[derive(Args, Debug)]
struct SearchBudget {
    /// Search steps per partition before the verdict is `unknown` (exit 4).
    #[arg(long, value_name = "STEPS", default_value_t = crate::check::linearizability::Budget::default().max_steps_per_partition)]
    budget: u64,
    /// Positions the search's memo may hold, over all of a file's partitions, before the
    /// verdict is `unknown` (exit 4): the checker's memory bound, 80 to 250 bytes a position
    /// (docs/checks.md#linearizability-engine).
    #[arg(long, value_name = "ENTRIES", default_value_t = crate::check::linearizability::Budget::default().max_memo_entries)]
    memo_entries: u64,
}

impl SearchBudget {
    fn budget(&self) -> crate::check::linearizability::Budget {
        crate::check::linearizability::Budget::steps(self.budget).memo_entries(self.memo_entries)
    }
}

#[derive(Args, Debug)]
struct CheckArgs {
    /// Reader and sequential model for every file. Without it each file's own is told from
    /// its first event line: a Jepsen etcd log is etcd, an EDN op map kv; our history.jsonl
    /// needs ledger or lease.
    #[arg(long, value_enum)]
    model: Option<crate::check::command::CheckModel>,
    /// One JSON object per file (file, model, verdict, ops, elapsed_ms, explanation).
    #[arg(long)]
    json: bool,
    #[command(flatten)]
    budget: SearchBudget,
    /// The history files.
    #[arg(value_name = "FILE", required = true)]
    files: Vec<PathBuf>,
}

#[derive(Args, Debug)]
struct JudgeArgs {
    /// One JSON object per file and per line (file, verdict, exit_code, operations, checks
    /// as result.json holds them, error) instead of text.
    #[arg(long)]
    json: bool,
    #[command(flatten)]
    budget: SearchBudget,
    /// The history files (history.jsonl).
    #[arg(value_name = "FILE", required = true)]
    files: Vec<PathBuf>,
}

#[derive(Subcommand, Debug)]
enum Service {
    /// The lease service: grants, renews and releases session leases with fencing tokens.
    /// After a restart it refuses grants (UNAVAILABLE) until every lease it may have granted
    /// before has expired.
    Lease {
        #[command(flatten)]
        common: ServeArgs,
        /// TTL of every lease granted (at most 1 day; default 10s). Live mode takes the run
        /// file's instead.
        #[arg(long, value_parser = parse_ttl, conflicts_with = "run")]
        ttl: Option<Duration>,
        /// How often the restart grace countdown is written to disk (at most 1 hour; default
        /// 1s). Live mode takes the world's instead.
        #[arg(long, value_parser = parse_grace_persist_interval, conflicts_with = "run")]
        grace_persist_interval: Option<Duration>,
    },
    /// The ledger service: append-only logs where every append is a CAS on the tip, synced
    /// to disk before it is acknowledged.
    Ledger {
        #[command(flatten)]
        common: ServeArgs,
    },
}

#[derive(Args, Debug, Clone)]
struct RunArgs {
    /// The run: a seed and a scenario, or a seed and flags.
    #[command(flatten)]
    request: RunRequest,
    /// Folder for run.json, history.jsonl, trace.jsonl, schedule.json, script.json (a
    /// scripted run), result.json and timeline.svg (the run drawn: one lane per host, lease
    /// holds, validity windows, appends and fences, faults, the violation); what an earlier
    /// run left there is replaced.
    #[arg(long, value_name = "DIR", default_value = "runs/latest")]
    out: PathBuf,
    /// Run the world on this backend (`grpc`, `kube`, `flock`, or `target:<name>` in the targets
    /// binary), in place of the scenario's `[world] backend` or the default `grpc`: the run
    /// file records it, so `replay` needs no flag. Refused (exit 2) when the scenario's
    /// schedule names a fault it cannot take or its TTL is one it cannot grant.
    #[arg(long, value_name = "NAME", value_parser = parse_backend)]
    backend: Option<BackendSpec>,
    /// Run the world on this engine: `turmoil` (the default) or `engine`, leasesim's own (docs/world.md#the-world-on-the-engine). The run
    /// file records it, so `replay` needs no flag.
    #[arg(long, value_name = "turmoil|engine", value_parser = parse_engine)]
    engine: Option<WorldEngine>,
    /// Wall-clock limit of the run; past it the run is reported as a hang (exit 3). Default:
    /// a minute plus 4 × what the run's simulated time takes here (10 ms per simulated
    /// second); a limit under 2 × that is refused (exit 2), as the run may merely be long.
    #[arg(long, value_parser = parse_duration)]
    timeout: Option<Duration>,
    /// Replay the run file twice, each in a process of its own, and compare history and
    /// trace byte for byte: exit 0 when identical (no verdict is printed: the runs' own
    /// checks are not what it asks), 3 on any difference.
    #[arg(long)]
    check_determinism: bool,
}

#[derive(Args, Debug, Clone)]
struct ReplayArgs {
    /// The run file.
    #[arg(value_name = "RUN.json")]
    file: PathBuf,
    /// Folder for run.json, history.jsonl, trace.jsonl, schedule.json, script.json (a
    /// scripted run), result.json and timeline.svg (the run drawn: one lane per host, lease
    /// holds, validity windows, appends and fences, faults, the violation); what an earlier
    /// run left there is replaced.
    #[arg(long, value_name = "DIR", default_value = "runs/latest")]
    out: PathBuf,
    /// Wall-clock limit of the run; past it the run is reported as a hang (exit 3). Default:
    /// a minute plus 4 × what the run's simulated time takes here (10 ms per simulated
    /// second); a limit under 2 × that is refused (exit 2), as the run may merely be long.
    #[arg(long, value_parser = parse_duration)]
    timeout: Option<Duration>,
}

#[derive(Args, Debug)]
struct ServeArgs {
    /// Address to listen on (`host:port`; port 0 picks a free port, printed at start).
    #[arg(long, value_name = "HOST:PORT")]
    listen: String,
    /// Directory for the service's durable state (created if missing).
    #[arg(long, value_name = "DIR")]
    data: PathBuf,
    /// Live mode (with --history and --boot): the run file giving the settings, mutant and
    /// sessions the simulated world would give this service. Needs LEASESIM_LIVE_EPOCH_NS.
    #[arg(long, value_name = "RUN.json", requires_all = ["history", "boot"])]
    run: Option<PathBuf>,
    /// Live mode: this boot's history file (it must not exist).
    #[arg(long, value_name = "FILE", requires_all = ["run", "boot"])]
    history: Option<PathBuf>,
    /// Live mode: this boot of the service's host, from 0.
    #[arg(long, value_name = "N", requires_all = ["run", "history"])]
    boot: Option<u64>,
    /// Start even though the checkpoint file is missing, rebuilding it from the logs as they
    /// are. Without it such a start is refused (exit 2): a log cut at a frame boundary looks
    /// whole, so acknowledged records could be lost and lease tokens reissued. Use it only
    /// when the logs are known to be whole, or that loss is accepted.
    #[arg(long)]
    rebuild_checkpoint: bool,
}

/// Exit code: everything as expected.
const CLEAN: Exit = Exit::Clean;
/// Exit code: bad input or usage.
const BAD_INPUT: Exit = Exit::BadInput;
/// Exit code: the harness itself failed.
const HARNESS_ERROR: Exit = Exit::HarnessError;

/// `leasesim`'s command line: parses this process's arguments, runs the command and returns
/// its exit code (docs/exit-codes.md). A `target:` backend is refused (exit 2), naming the
/// targets binary.
pub fn main() -> ExitCode {
    run_cli(Cli::parse(), "leasesim")
}

/// The same command line in a targets binary named `binary` (its name in `--help` and usage
/// lines), with `targets` as the backends `target:<name>` names: each backend's name must be
/// `target:<name>`; an unknown `target:` name is refused (exit 2) listing these. Campaigns
/// and determinism checks start their processes from this same executable.
pub fn main_with_targets(
    binary: &'static str,
    targets: Vec<crate::sim::backend::Backend>,
) -> ExitCode {
    if let Err(error) = crate::sim::backend::register_targets(targets) {
        return fail(error, HARNESS_ERROR);
    }
    let matches = Cli::command().name(binary).bin_name(binary).get_matches();
    match Cli::from_arg_matches(&matches) {
        Ok(cli) => run_cli(cli, binary),
        Err(error) => error.exit(),
    }
}

/// Runs the parsed command line as `binary` (`leasesim`, `leasesim-targets`).
/// `leasesim flock`'s exit code: 0 at `quit` or EOF, 2 on a bad argument, 3 when it could
/// not start (docs/exit-codes.md).
fn flock_exit(outcome: Result<(), crate::lease::flock::driver::StartError>) -> Exit {
    use crate::lease::flock::driver::StartError;
    match outcome {
        Ok(()) => Exit::Clean,
        Err(StartError::BadInput) => Exit::BadInput,
        Err(StartError::Harness) => Exit::HarnessError,
    }
}

fn run_cli(cli: Cli, binary: &'static str) -> ExitCode {
    tracing_subscriber::fmt()
        .with_env_filter(log_filter(&cli.command))
        .with_writer(std::io::stderr)
        .init();
    match cli.command {
        Command::Campaign(args) => campaign(args, binary),
        Command::Mutants => {
            print!("{}", crate::mutants::catalogue());
            ExitCode::from(CLEAN)
        }
        Command::Run(args) => run(args),
        Command::Replay(args) => replay(args),
        Command::Serve { service } => serve_on_runtime(service),
        Command::Check(args) => check(args),
        Command::Judge(args) => judge(args),
        Command::Report { command } => report(command),
        // Single-threaded on purpose (it forks): no multi-thread runtime is built for it.
        Command::Flock(args) => ExitCode::from(flock_exit(crate::lease::flock::driver::main(args))),
        Command::Live(args) => ExitCode::from(crate::live::orchestrate::main(args)),
        Command::Replica(args) => ExitCode::from(crate::live::replica::main(args)),
    }
}

/// `serve`, on a multi-thread runtime.
fn serve_on_runtime(service: Service) -> ExitCode {
    match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => {
            let exit = runtime.block_on(serve(service));
            // A blocking file task still running (a read stuck in the kernel) must not hold
            // the process past its stop bound: leave it to the OS.
            runtime.shutdown_timeout(Duration::from_millis(100));
            exit
        }
        Err(error) => {
            eprintln!("error: cannot start the async runtime: {error}");
            ExitCode::from(HARNESS_ERROR)
        }
    }
}

/// `report render DIR` and `report merge DIR... --out DIR`: the verdict line last, as a
/// campaign prints it.
fn report(command: ReportCommand) -> ExitCode {
    // The folder written is locked, as a campaign locks it: a render or merge beside a
    // running campaign would read half its records and write a verdict it then replaces.
    let outcome = match command {
        ReportCommand::Render { dir } => crate::input::OutputLock::take_existing(&dir)
            .map_err(ReportError::from)
            .and_then(|_lock| crate::report::render_summary(&dir).map(|summary| (summary, dir))),
        ReportCommand::Merge { dirs, out, force } => {
            // Checked before the lock creates `out`, and again by the merge itself.
            crate::input::refuse_input_as_output(&out, &dirs)
                .map_err(ReportError::from)
                .and_then(|()| crate::input::OutputLock::take(&out).map_err(ReportError::from))
                .and_then(|_lock| {
                    crate::report::merge_summary(&dirs, &out, force).map(|summary| (summary, out))
                })
        }
    };
    match outcome {
        Ok((summary, dir)) => {
            println!("{}", summary.closing_lines(&dir));
            ExitCode::from(summary.exit())
        }
        Err(error) => fail(error, BAD_INPUT),
    }
}

fn check(args: CheckArgs) -> ExitCode {
    let options = crate::check::command::CheckOptions {
        model: args.model,
        json: args.json,
        budget: args.budget.budget(),
        files: args.files,
    };
    ExitCode::from(crate::check::command::run(
        &options,
        &mut std::io::stdout().lock(),
        &mut std::io::stderr().lock(),
    ))
}

fn judge(args: JudgeArgs) -> ExitCode {
    let options = crate::check::judge_command::JudgeOptions {
        json: args.json,
        budget: args.budget.budget(),
        files: args.files,
    };
    ExitCode::from(crate::check::judge_command::run(
        &options,
        &mut std::io::stdout().lock(),
        &mut std::io::stderr().lock(),
    ))
}

/// `RUST_LOG` when set; otherwise errors only, except that a service also shows warnings:
/// they are for its operator (e.g. a damaged log tail cut at recovery).
fn log_filter(command: &Command) -> tracing_subscriber::EnvFilter {
    use tracing_subscriber::EnvFilter;
    match command {
        Command::Serve { .. } => {
            EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("warn"))
        }
        _ => EnvFilter::from_default_env(),
    }
}

/// `replay RUN.json`.
fn replay(args: ReplayArgs) -> ExitCode {
    match RunFile::load(&args.file) {
        Ok(run) => match run_timeout(&run, args.timeout) {
            Ok(timeout) => execute_run(&run, &args.out, timeout),
            Err(code) => code,
        },
        Err(error) => fail(error, BAD_INPUT),
    }
}

/// Says `error` on stderr (`error: …`) and exits with `code`.
fn fail(error: impl std::fmt::Display, code: Exit) -> ExitCode {
    eprintln!("error: {error}");
    ExitCode::from(code)
}

/// Prints the seed of `run` and the options it runs with into `out`, under `timeout`: the
/// first lines of `run`, `replay` and `--check-determinism`.
fn print_header(run: &RunFile, out: &Path, timeout: Duration) {
    println!("SEED={}", run.seed);
    print!("{}", run.describe(out, timeout));
}

/// Runs `run` into `out`: prints the seed and the options, writes the files, prints the
/// replay line (and the equivalent `run` flags, if any), then the verdict.
fn execute_run(run: &RunFile, out: &Path, timeout: Duration) -> ExitCode {
    print_header(run, out, timeout);
    let outcome = crate::campaign::single::run_into(run, out, timeout);
    let replay = run.replay_command(&out.join("run.json"));
    let flags =
        RunRequest::equivalent(run, out).map(|request| request.command(run.world.backend.binary()));
    let print_replay = |print: &dyn Fn(String)| {
        print(format!("replay: {replay}"));
        if let Some(flags) = &flags {
            print(format!("   or: {flags}"));
        }
    };
    match outcome {
        Ok(judged) => {
            let result = &judged.result.run;
            let liveness = if result.ended_ms > result.duration_ms {
                format!(" ({} + the liveness phase)", seconds_ms(result.duration_ms))
            } else {
                String::new()
            };
            println!(
                "ran {} of simulated time{liveness}: {} operations, {} history lines in {}",
                seconds_ms(result.ended_ms),
                result.operations,
                result.history_lines,
                out.display()
            );
            print_replay(&|line| println!("{line}"));
            print!("{}", judged.verdict.text);
            println!("{}", judged.verdict.final_line());
            ExitCode::from(judged.verdict.exit)
        }
        Err(RunnerError::BadInput(error)) => fail(error, BAD_INPUT),
        Err(error) => {
            // A hang or a panic: the run file is what reproduces it.
            eprintln!("error: {error}");
            print_replay(&|line| eprintln!("{line}"));
            ExitCode::from(HARNESS_ERROR)
        }
    }
}

fn campaign(args: CampaignArgs, binary: &'static str) -> ExitCode {
    let jobs = args.jobs.map_or_else(
        || std::thread::available_parallelism().map_or(1, |n| n.get()),
        |n| n as usize,
    );
    let seeds = match (args.seeds, args.budget) {
        (Some(seeds), _) => seeds,
        (None, budget) => SeedPlan::Budget(budget.unwrap_or(Duration::from_secs(50))),
    };
    let options = CampaignOptions {
        sims: args.sims,
        seeds,
        jobs,
        shard: args.shard,
        out: args.out,
        run_timeout: args.run_timeout,
        resume: args.resume,
        shrink: !args.no_shrink,
        save_regressions: args.save_regressions,
        progress: !args.no_progress,
        mutant: args.mutant.map(|m| m.name().to_owned()),
        detect: args.mutants.map(|list| list.0).unwrap_or_default(),
        mutant_seeds: args.mutant_seeds,
        backend: args.backend,
        engine: args.engine,
        binary,
    };
    match crate::campaign::driver::campaign(&options) {
        Ok(summary) => {
            // The last line, after the progress bar and every other message: the verdict,
            // the exit code and where the report is.
            println!("{}", summary.closing_lines(&options.out));
            ExitCode::from(summary.exit())
        }
        Err(error) => fail(&error, error.exit_code()),
    }
}

/// `run`: resolve the flags (or the scenario) to a run file, then run that file — here, or
/// with --check-determinism twice in fresh processes.
fn run(args: RunArgs) -> ExitCode {
    let run = match args.request.resolve_on(args.backend.as_ref()) {
        Ok(mut run) => {
            if let Some(engine) = args.engine {
                run.world.engine = engine;
            }
            run
        }
        Err(error) => return fail(error, BAD_INPUT),
    };
    let timeout = match run_timeout(&run, args.timeout) {
        Ok(timeout) => timeout,
        Err(code) => return code,
    };
    if args.check_determinism {
        return check_determinism(&run, &args.out, timeout);
    }
    execute_run(&run, &args.out, timeout)
}

/// `--timeout` for `run`, or the limit derived from its simulated length
/// ([`crate::sim::wall::timeout`]); exit 2 (said on stderr) for a limit too short for it.
fn run_timeout(run: &RunFile, given: Option<Duration>) -> Result<Duration, ExitCode> {
    crate::sim::wall::timeout(run.simulated_end_ms(), run.replicas(), given, "--timeout")
        .map_err(|error| fail(error, BAD_INPUT))
}

/// Replays `run` in two fresh processes of this executable and compares what they wrote.
fn check_determinism(run: &RunFile, out: &Path, timeout: Duration) -> ExitCode {
    print_header(run, out, timeout);
    let verdict = crate::sim::determinism::check(run, out, timeout);
    match verdict {
        Ok(text) => {
            println!("{text}");
            ExitCode::from(CLEAN)
        }
        Err(crate::sim::determinism::Failure::BadInput(error)) => fail(error, BAD_INPUT),
        Err(failure) => {
            eprintln!("{failure}");
            ExitCode::from(HARNESS_ERROR)
        }
    }
}

async fn serve(service: Service) -> ExitCode {
    let options = |common: ServeArgs| ServeOptions {
        listen: common.listen,
        data: common.data,
        live: match (common.run, common.history, common.boot) {
            (Some(run), Some(history), Some(boot)) => Some(LiveOptions { run, history, boot }),
            _ => None,
        },
        rebuild_checkpoint: common.rebuild_checkpoint,
    };
    let served = match service {
        Service::Lease {
            common,
            ttl,
            grace_persist_interval,
        } => {
            let mut config = DurableLeaseConfig::with_ttl(ttl.unwrap_or(Duration::from_secs(10)));
            config.grace_persist_interval =
                grace_persist_interval.unwrap_or(Duration::from_secs(1));
            let options = options(common);
            serve::until_stopped(|stop| serve::lease(options, config, stop)).await
        }
        Service::Ledger { common } => {
            let options = options(common);
            serve::until_stopped(|stop| serve::ledger(options, stop)).await
        }
    };
    match served {
        Ok(()) => ExitCode::from(CLEAN),
        Err(error @ ServeError::BadInput(_)) => fail(error, BAD_INPUT),
        Err(error) => fail(error, HARNESS_ERROR),
    }
}
