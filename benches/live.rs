//! The measurement that justifies simulation (issue 16, deliverable 4): live mode against the
//! simulated world on the same scenario shape.
//!
//! For the mutants `append-ignores-expected-tip`, `no-local-deadline` and `no-grace-period`,
//! each on its live scenario `sims/live/m-MUTANT.toml`, in both modes — `leasesim run` (the
//! simulated world) and `leasesim live` (real processes) with the same flags, so both resolve
//! the same run file (`RunRequest::resolve`; the bench checks the two `run.json` files are
//! byte-identical) — it counts, from `LIVE_BENCH_SEEDS` starting seeds (default 5: 1, 1001,
//! 2001, …; consecutive seeds from each), the runs to detection (the first run whose
//! `result.json` reports a violation of the check that kills the mutant in simulation, as
//! `leasesim mutants` names it) and the wall time to detection (every run until then, the
//! detecting one included, process start to exit), at most `LIVE_BENCH_MAX` runs per start
//! (default 10). Then the correct implementation (no mutant) runs `LIVE_BENCH_RUNS` times in
//! each mode (default 200; round robin over the three scenarios and `sims/live/l1-*.toml`,
//! seeds 1, 2, …); a run whose verdict names a violated check is a false alarm: its folder is
//! kept and its cause (the verdict and each violation's message) printed. Runs are made one at
//! a time (2 cores; SIGSTOP timing); one table is printed at the end and written to
//! `OUT/table.txt`.
//!
//! `cargo bench --bench live` (release build). Figures, not assertions. It runs the release
//! `leasesim` binary as a child: `LEASESIM_BIN` if set, else the `leasesim` next to the bench's
//! own `deps/` folder (the target dir's `release/leasesim`, which cargo builds for a bench; this
//! follows `CARGO_TARGET_DIR`), else `CARGO_MANIFEST_DIR/target/release/leasesim`.
//!
//! Environment: `LIVE_BENCH_RUNS` (correct runs per mode, default 200), `LIVE_BENCH_SEEDS`
//! (starting seeds per mutant, default 5), `LIVE_BENCH_MAX` (runs per start, default 10),
//! `LIVE_BENCH_OUT` (run folders, default `runs/live-bench/` in the repository; a clean run's
//! folder is removed, a false alarm's or a harness error's kept), `LIVE_BENCH_BUDGET` (e.g.
//! `30m`: no live run starts once the bench has run that long; the table says how many ran).

// A benchmark measures real time and starts real processes by definition.
#![allow(clippy::disallowed_types, clippy::disallowed_methods)]

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use leasesim::mutant::Mutant;
use leasesim::mutants::{self, Kill};

/// The mutants measured (issue 16), each on `sims/live/m-NAME.toml`.
const MUTANTS: [&str; 3] = [
    "append-ignores-expected-tip",
    "no-local-deadline",
    "no-grace-period",
];

/// The scenarios the correct implementation runs on, in turn.
const CLEAN_SCENARIOS: [&str; 4] = [
    "m-append-ignores-expected-tip",
    "m-no-local-deadline",
    "m-no-grace-period",
    "l1-real-pause-longer-than-ttl",
];

/// Seeds between two starting seeds of a mutant's detection.
const START_STRIDE: u64 = 1_000;

/// A child still running past this is killed and counted as a harness error (live mode's own
/// default limit is the run's duration and liveness phase plus a minute).
const CHILD_BOUND: Duration = Duration::from_secs(150);

/// How a run is made.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Mode {
    /// `leasesim run`: the simulated world.
    Sim,
    /// `leasesim live`: real processes.
    Live,
}

impl Mode {
    fn command(self) -> &'static str {
        match self {
            Mode::Sim => "run",
            Mode::Live => "live",
        }
    }

    fn name(self) -> &'static str {
        match self {
            Mode::Sim => "sim",
            Mode::Live => "live",
        }
    }
}

/// What one run reported.
struct Outcome {
    /// Exit code (`None`: killed by a signal or by the bench's bound).
    exit: Option<i32>,
    /// Checks whose verdict in `result.json` is `fail`.
    failed: Vec<String>,
    /// `result.json`'s verdict line, or why there is none.
    verdict: String,
    /// Each violation's message, prefixed by its check.
    causes: Vec<String>,
    /// Process start to exit.
    wall: Duration,
}

/// The bench's settings and its clock.
struct Bench {
    bin: PathBuf,
    root: PathBuf,
    out: PathBuf,
    started: Instant,
    budget: Option<Duration>,
}

/// Kills the child on drop (a panic or an early return never leaves it running); the
/// orchestrator's own children die with it (`PR_SET_PDEATHSIG`).
struct Reaped(Child);

impl Drop for Reaped {
    fn drop(&mut self) {
        if let Ok(None) = self.0.try_wait() {
            let _ = self.0.kill();
        }
        let _ = self.0.wait();
    }
}

impl Bench {
    /// Whether the budget allows another live run.
    fn within_budget(&self) -> bool {
        self.budget.is_none_or(|b| self.started.elapsed() < b)
    }

    /// One run of `scenario` (`sims/live/NAME.toml`) in `mode` into `dir`.
    fn run(
        &self,
        mode: Mode,
        scenario: &str,
        seed: u64,
        mutant: Option<&str>,
        dir: &Path,
    ) -> Outcome {
        let _ = std::fs::remove_dir_all(dir);
        std::fs::create_dir_all(dir).expect("the run's folder can be made");
        let log = std::fs::File::create(dir.join("bench.log")).expect("bench.log");
        let mut command = Command::new(&self.bin);
        command
            .arg(mode.command())
            .arg("--scenario")
            .arg(self.root.join(format!("sims/live/{scenario}.toml")))
            .arg("--seed")
            .arg(seed.to_string())
            .arg("--out")
            .arg(dir)
            .current_dir(&self.root)
            .stdin(Stdio::null())
            .stdout(log.try_clone().expect("bench.log"))
            .stderr(log);
        if let Some(mutant) = mutant {
            command.arg("--mutant").arg(mutant);
        }
        let started = Instant::now();
        let mut child = Reaped(command.spawn().unwrap_or_else(|e| {
            panic!("cannot start {}: {e}", self.bin.display());
        }));
        let status = loop {
            match child.0.try_wait() {
                Ok(Some(status)) => break Some(status),
                Ok(None) if started.elapsed() > CHILD_BOUND => break None,
                Ok(None) => std::thread::sleep(Duration::from_millis(20)),
                Err(e) => panic!("waiting for {}: {e}", self.bin.display()),
            }
        };
        drop(child);
        let wall = started.elapsed();
        let exit = status.and_then(|s| s.code());
        let (failed, verdict, causes) = read_result(dir, status.is_none());
        Outcome {
            exit,
            failed,
            verdict,
            causes,
            wall,
        }
    }
}

/// The failed checks, verdict line and violation messages of `dir/result.json`.
fn read_result(dir: &Path, timed_out: bool) -> (Vec<String>, String, Vec<String>) {
    if timed_out {
        let why = format!("killed by the bench after {} s", CHILD_BOUND.as_secs());
        return (Vec::new(), why, Vec::new());
    }
    let text = match std::fs::read_to_string(dir.join("result.json")) {
        Ok(text) => text,
        Err(e) => return (Vec::new(), format!("no result.json ({e})"), Vec::new()),
    };
    let result: serde_json::Value = match serde_json::from_str(&text) {
        Ok(value) => value,
        Err(e) => {
            return (
                Vec::new(),
                format!("result.json unreadable ({e})"),
                Vec::new(),
            );
        }
    };
    let mut failed = Vec::new();
    let mut causes = Vec::new();
    for check in result["checks"].as_array().into_iter().flatten() {
        if check["verdict"] != "fail" {
            continue;
        }
        let name = check["name"].as_str().unwrap_or("?").to_owned();
        for violation in check["violations"].as_array().into_iter().flatten() {
            let message = violation["message"].as_str().unwrap_or("?");
            causes.push(format!("{name}: {message}"));
        }
        failed.push(name);
    }
    let verdict = result["verdict"].as_str().unwrap_or("?").to_owned();
    (failed, verdict, causes)
}

/// One mutant's detections in one mode: per starting seed, runs and wall time to detection
/// (`None`: not within the limit).
struct Detections {
    found: Vec<(u64, Duration)>,
    missed: usize,
    /// Runs that ended without a verdict (harness error, killed).
    harness: usize,
    /// All runs made.
    runs: u64,
    /// Starting seeds skipped for the budget.
    skipped: usize,
    /// The run file of seed 1 (`run.json`), to compare across the modes.
    seed_1_run_file: Option<Vec<u8>>,
}

fn detect(
    bench: &Bench,
    mode: Mode,
    mutant: &str,
    check: &str,
    starts: u64,
    max: u64,
) -> Detections {
    let mut d = Detections {
        found: Vec::new(),
        missed: 0,
        harness: 0,
        runs: 0,
        skipped: 0,
        seed_1_run_file: None,
    };
    let scenario = format!("m-{mutant}");
    for start in 0..starts {
        if mode == Mode::Live && !bench.within_budget() {
            d.skipped += 1;
            continue;
        }
        let first = 1 + start * START_STRIDE;
        let mut wall = Duration::ZERO;
        let mut hit = None;
        for n in 0..max {
            let dir = bench
                .out
                .join(format!("{}/{mutant}/seed-{}", mode.name(), first + n));
            let outcome = bench.run(mode, &scenario, first + n, Some(mutant), &dir);
            d.runs += 1;
            wall += outcome.wall;
            let detected = outcome.failed.iter().any(|c| c == check);
            if first + n == 1 {
                d.seed_1_run_file = std::fs::read(dir.join("run.json")).ok();
            }
            if outcome.exit.is_none() || outcome.exit == Some(3) {
                d.harness += 1;
                eprintln!(
                    "  {} {mutant} seed {}: harness error, folder kept: {}",
                    mode.name(),
                    first + n,
                    dir.display()
                );
            } else {
                let _ = std::fs::remove_dir_all(&dir);
            }
            eprintln!(
                "  {} {mutant} seed {}: {} in {:.2} s",
                mode.name(),
                first + n,
                outcome.verdict,
                outcome.wall.as_secs_f64()
            );
            if detected {
                hit = Some((n + 1, wall));
                break;
            }
        }
        match hit {
            Some(found) => d.found.push(found),
            None => d.missed += 1,
        }
    }
    d
}

/// The correct implementation's runs in one mode: (runs made, false alarms, other runs
/// without a clean verdict, their lines).
fn false_alarms(bench: &Bench, mode: Mode, runs: u64) -> (u64, u64, u64, Vec<String>) {
    let (mut made, mut alarms, mut other) = (0, 0, 0);
    let mut lines = Vec::new();
    for k in 0..runs {
        if mode == Mode::Live && !bench.within_budget() {
            break;
        }
        let scenario = CLEAN_SCENARIOS[(k % CLEAN_SCENARIOS.len() as u64) as usize];
        let seed = 1 + k;
        let dir = bench
            .out
            .join(format!("{}/correct/{scenario}-seed-{seed}", mode.name()));
        let outcome = bench.run(mode, scenario, seed, None, &dir);
        made += 1;
        if mode == Mode::Live {
            eprintln!(
                "  live correct {}/{runs} {scenario} seed {seed}: {} in {:.2} s",
                k + 1,
                outcome.verdict,
                outcome.wall.as_secs_f64()
            );
        }
        if outcome.exit == Some(0) {
            let _ = std::fs::remove_dir_all(&dir);
            continue;
        }
        if outcome.failed.is_empty() {
            other += 1;
        } else {
            alarms += 1;
        }
        let mut line = format!(
            "{} {scenario} seed {seed}: {} (exit {}) — folder {}",
            mode.name(),
            outcome.verdict,
            outcome.exit.map_or("none".into(), |c| c.to_string()),
            dir.display()
        );
        for cause in &outcome.causes {
            let _ = write!(line, "\n    {cause}");
        }
        eprintln!("  {line}");
        lines.push(line);
    }
    (made, alarms, other, lines)
}

/// `(median, worst)` of `values`, or `None` when empty.
fn median_worst<T: Ord + Copy>(values: &mut [T]) -> Option<(T, T)> {
    values.sort_unstable();
    Some((*values.get(values.len() / 2)?, *values.last()?))
}

fn env_u64(name: &str, default: u64) -> u64 {
    match std::env::var(name) {
        Ok(text) => text
            .parse()
            .unwrap_or_else(|_| panic!("{name}={text}: give a whole number")),
        Err(_) => default,
    }
}

/// The `leasesim` binary: `LEASESIM_BIN`, next to the bench's `deps/`, or the default
/// target dir's.
fn binary(root: &Path) -> PathBuf {
    if let Some(bin) = std::env::var_os("LEASESIM_BIN") {
        return PathBuf::from(bin);
    }
    let beside = std::env::current_exe()
        .ok()
        .and_then(|exe| Some(exe.parent()?.parent()?.join("leasesim")));
    beside
        .filter(|p| p.is_file())
        .unwrap_or_else(|| root.join("target/release/leasesim"))
}

/// The bench's set-up from the environment (see the module page).
fn bench_from_env() -> Bench {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let bin = binary(&root);
    assert!(
        bin.is_file(),
        "no leasesim binary at {}: run `cargo build --release` or set LEASESIM_BIN",
        bin.display()
    );
    let out = std::env::var_os("LIVE_BENCH_OUT")
        .map(PathBuf::from)
        .unwrap_or_else(|| root.join("runs/live-bench"));
    let budget = std::env::var("LIVE_BENCH_BUDGET").ok().map(|text| {
        humantime::parse_duration(&text)
            .unwrap_or_else(|e| panic!("LIVE_BENCH_BUDGET={text}: not a duration ({e})"))
    });
    Bench {
        bin,
        root,
        out,
        started: Instant::now(),
        budget,
    }
}

/// The bench's table as it is written, and what is said below it.
#[derive(Default)]
struct Table {
    text: String,
    /// Live against simulation, per mutant.
    ratios: Vec<String>,
    notes: Vec<String>,
}

impl Table {
    /// The rows of `mutant` (one per mode): runs and wall time to detection from `starts`
    /// starting seeds, at most `max` runs each; its ratio and notes.
    fn add_mutant(&mut self, bench: &Bench, mutant: &str, starts: u64, max: u64) {
        let parsed = Mutant::parse(mutant).expect("a mutant of the catalogue");
        let Kill::Scenario { check, .. } = mutants::kill(parsed) else {
            panic!("{mutant} is killed by a scenario in simulation");
        };
        let check = check.name();
        let mut medians = Vec::new();
        let mut run_files = Vec::new();
        for mode in [Mode::Sim, Mode::Live] {
            let d = detect(bench, mode, mutant, check, starts, max);
            medians.push(self.add_mode_row(mutant, check, mode, &d, starts));
            run_files.push(d.seed_1_run_file);
        }
        if let [
            Some(((sim_runs, _), (sim_wall, _))),
            Some(((live_runs, _), (live_wall, _))),
        ] = medians[..]
        {
            self.ratios.push(format!(
                "{mutant}: live needs {:.1}× the runs and {:.0}× the wall time (medians)",
                live_runs as f64 / sim_runs as f64,
                live_wall.as_secs_f64() / sim_wall.as_secs_f64().max(1e-9)
            ));
        }
        match &run_files[..] {
            [Some(sim), Some(live)] if sim == live => {}
            [Some(_), Some(_)] => self.notes.push(format!(
                "{mutant}: the two modes' run.json of seed 1 differ"
            )),
            _ => self
                .notes
                .push(format!("{mutant}: seed 1 made no run.json in a mode")),
        }
    }

    /// The row of `mutant` in `mode` from its detections `d`; returns the medians and worsts
    /// of its runs and wall times to detection.
    fn add_mode_row(
        &mut self,
        mutant: &str,
        check: &str,
        mode: Mode,
        d: &Detections,
        starts: u64,
    ) -> Option<((u64, u64), (Duration, Duration))> {
        let mut counts: Vec<u64> = d.found.iter().map(|f| f.0).collect();
        let mut walls: Vec<Duration> = d.found.iter().map(|f| f.1).collect();
        let runs = median_worst(&mut counts).map_or("-".into(), |(m, w)| format!("{m} / {w}"));
        let wall = median_worst(&mut walls).map_or("-".into(), |(m, w)| {
            format!("{:.2} / {:.2}", m.as_secs_f64(), w.as_secs_f64())
        });
        let mut missed = format!("{} of {}", d.missed, starts - d.skipped as u64);
        if d.skipped > 0 {
            let _ = write!(missed, " ({} skipped: budget)", d.skipped);
        }
        let _ = writeln!(
            self.text,
            "{:<28} {:<6} {:<5} {:>14} {:>18} {:>10}",
            mutant,
            check,
            mode.name(),
            runs,
            wall,
            missed
        );
        if d.harness > 0 {
            self.notes.push(format!(
                "{mutant}, {}: {} of {} runs ended without a verdict (harness error)",
                mode.name(),
                d.harness,
                d.runs
            ));
        }
        median_worst(&mut counts).zip(median_worst(&mut walls))
    }
}

fn main() {
    // `cargo bench` passes `--bench`; nothing else is taken from the command line.
    let bench = bench_from_env();
    let runs = env_u64("LIVE_BENCH_RUNS", 200);
    let starts = env_u64("LIVE_BENCH_SEEDS", 5);
    let max = env_u64("LIVE_BENCH_MAX", 10).max(1);
    eprintln!(
        "live bench: {} — {starts} starting seeds × at most {max} runs per mutant, {runs} \
         correct runs per mode, folders in {}",
        bench.bin.display(),
        bench.out.display()
    );

    let mut table = Table::default();
    let _ = writeln!(
        table.text,
        "{:<28} {:<6} {:<5} {:>14} {:>18} {:>10}",
        "mutant", "check", "mode", "runs med/worst", "wall s med/worst", "not found"
    );
    for mutant in MUTANTS {
        table.add_mutant(&bench, mutant, starts, max);
    }
    let Table {
        text: mut table,
        ratios,
        notes,
    } = table;
    let _ = writeln!(table);
    let mut alarm_lines = Vec::new();
    for mode in [Mode::Sim, Mode::Live] {
        let (made, alarms, other, lines) = false_alarms(&bench, mode, runs);
        let stopped = if made < runs {
            format!(" (stopped by LIVE_BENCH_BUDGET after {made} of {runs})")
        } else {
            String::new()
        };
        let _ = writeln!(
            table,
            "correct implementation, {:<4}: {alarms} false alarms in {made} runs, {other} runs \
             without a verdict{stopped}",
            mode.name()
        );
        alarm_lines.extend(lines);
    }
    for ratio in &ratios {
        let _ = writeln!(table, "{ratio}");
    }
    for note in &notes {
        let _ = writeln!(table, "note: {note}");
    }
    for line in &alarm_lines {
        let _ = writeln!(table, "{line}");
    }
    let _ = writeln!(
        table,
        "bench wall time {:.0} s",
        bench.started.elapsed().as_secs_f64()
    );
    print!("{table}");
    let _ = std::fs::create_dir_all(&bench.out);
    let _ = std::fs::write(bench.out.join("table.txt"), &table);
}
