//! Benchmark: checks every history in `tests/data/jepsen` (the files listed in its
//! `expected.csv`) and prints the per-file and total check time and operations per second.
//! Reading the files is not timed. Each file is checked at least [`ROUNDS`] times and for at
//! least [`MIN_TIME`]; its row gives the fastest and the mean check time. A row then checks the
//! linearizable etcd files at once, as one history with a partition per file, which the engine
//! searches on parallel threads: compare its time with the sum of those files' rows (their
//! sequential time). The last rows total exactly the files that porcupine v1.3.0's benchmarks
//! check, for a side-by-side run of
//! `go test -run '^$' -bench 'BenchmarkEtcdJepsen0[0-5]|BenchmarkKv(1Client|10Clients)(Ok|Bad)$'`
//! (the unanchored pattern selects `BenchmarkEtcdJepsen000` to `059`, which check
//! `etcd_000.log` to `etcd_059.log`, and the kv benchmarks check `c01-ok`, `c01-bad`, `c10-ok`
//! and `c10-bad`); Go's ns/op is a mean, so compare it with the sum of means, and with the
//! whole-process row: the binary run on those files, start-up, reading and parsing included. Every verdict is
//! compared with `expected.csv` (porcupine's benchmarks assert the same verdicts). The last
//! two rows check generated 100k-op histories with `--budget 1000` (bad-input probe D6): the
//! whole check, pruning included, must stop at the budget, quickly, with `unknown`. Then the
//! growth rows (issue 21, [`growth_rows`]): generated lease and ledger histories of 1k, 10k and
//! 100k operations in our history format, extracted and checked, whose µs per operation stays
//! flat (0.9–2.3 µs on 2 cores, 2026-12-03); `CHECK_GROWTH_ONLY=1` prints only those, and
//! `CHECK_JEPSEN_ONLY=1` stops before them.
//!
//! Then the generated worst-case families (issue 17; `tests/check/families.rs`): register, kv
//! and ledger histories of 5, 20 and 50 clients with many `:info` operations, without and with
//! one injected violation early, in the middle or at the end. Each row gives the fastest of a
//! few checks with the default budget, as `leasesim check` has it (50,000,000 steps per
//! partition and 4,000,000 memo entries per check; porcupine gets a 10 s timeout in the side-by-side
//! run), its verdict, the steps it counted and its largest memo (entries), then the peak RSS
//! of one process that checks the family alone ([`peak_rss`]: `leasesim check` on the
//! family's Jepsen text for register and kv, this benchmark re-run on the one family for
//! ledger, which has no file format), and one check with `--budget 100000` (which must end in
//! bounded time, `unknown` where more is needed). `CHECK_MEMO_ENTRIES=<n>` sets the memo cap
//! of those checks instead of the default (`CHECK_MEMO_ENTRIES=18446744073709551615`: no cap,
//! what the cap saves). With
//! `CHECK_FAMILIES_DIR=<dir>` (or `--families-dir <dir>` after `--`), the register and kv
//! families are also written there in the Jepsen text formats (`register-c05-ok.log`, an etcd
//! log; `kv-c05-bad-early.txt`, porcupine's kv test data), with an `expected.csv`, for other
//! checkers; `CHECK_FAMILIES_ONLY=1` skips the Jepsen files. Run with
//! `cargo bench --bench check`.

// Measuring real time is the point of a benchmark (docs/determinism.md#rules lets checkers use
// real time).
#![allow(clippy::disallowed_types)]

#[path = "../tests/check/families.rs"]
mod families;
#[path = "../tests/check/generated.rs"]
mod generated;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use leasesim::check::jepsen::{etcd, kv};
use leasesim::check::linearizability::kv::KvStore;
use leasesim::check::linearizability::ledger::{CasLedger, LedgerCall, LedgerInput, LedgerOutput};
use leasesim::check::linearizability::register::CasRegister;
use leasesim::check::linearizability::{
    Budget, Exhausted, Model, Operation, Verdict, check, check_counted, check_measured,
    lease_operations, ledger_operations,
};
use leasesim::history::History;

/// Least repetitions per file.
const ROUNDS: u32 = 5;
/// Runs of the whole-process row ([`whole_process_row`]).
const PROCESS_RUNS: usize = 30;

/// Least time spent repeating one file's check.
const MIN_TIME: Duration = Duration::from_millis(20);

/// Whether a file (its path in `expected.csv`) belongs to a set.
type Member = fn(&str) -> bool;

/// The porcupine v1.3.0 benchmark sets: a name and which of our files it checks.
const PORCUPINE: [(&str, Member); 2] = [
    (
        "porcupine: EtcdJepsen0[0-5]*, Kv{1Client,10Clients}{Ok,Bad}",
        |file| etcd_number(file).is_some_and(|n| n < 60) || kv_c01_c10(file),
    ),
    (
        "porcupine: EtcdJepsen000-005, Kv{1Client,10Clients}{Ok,Bad}",
        |file| etcd_number(file).is_some_and(|n| n < 6) || kv_c01_c10(file),
    ),
];

fn etcd_number(file: &str) -> Option<u32> {
    file.strip_prefix("etcd/etcd_")?
        .strip_suffix(".log")?
        .parse()
        .ok()
}

fn kv_c01_c10(file: &str) -> bool {
    [
        "kv/c01-ok.txt",
        "kv/c01-bad.txt",
        "kv/c10-ok.txt",
        "kv/c10-bad.txt",
    ]
    .contains(&file)
}

/// Sums over one set of files.
#[derive(Default)]
struct Totals {
    files: usize,
    ops: usize,
    fastest: Duration,
    mean: Duration,
}

fn main() {
    if let Ok(family) = std::env::var(LEDGER_FAMILY) {
        return ledger_family_alone(&family);
    }
    if std::env::var("CHECK_GROWTH_ONLY").is_ok() {
        return growth_rows();
    }
    if std::env::var("CHECK_FAMILIES_ONLY").is_err() {
        jepsen_files();
        if std::env::var("CHECK_JEPSEN_ONLY").is_ok() {
            return;
        }
        growth_rows();
    }
    family_rows(families_dir().as_deref());
}

/// Where to write the generated families: `--families-dir <dir>` or `CHECK_FAMILIES_DIR`.
fn families_dir() -> Option<PathBuf> {
    let mut args = std::env::args().skip_while(|a| a != "--families-dir");
    args.next();
    args.next()
        .or_else(|| std::env::var("CHECK_FAMILIES_DIR").ok())
        .map(PathBuf::from)
}

/// The Jepsen files' rows, the etcd row, the totals and the budget rows.
fn jepsen_files() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/jepsen");
    let csv = std::fs::read_to_string(dir.join("expected.csv")).unwrap_or_else(|e| {
        panic!(
            "cannot read {}/expected.csv ({e}): restore it with `git checkout -- tests/data/jepsen`",
            dir.display()
        )
    });
    let (mut total, mut total_ops) = (Duration::ZERO, 0usize);
    let (mut etcd_total, mut all_etcd) = (Duration::ZERO, Vec::new());
    let mut porcupine: [Totals; 2] = Default::default();
    let (mut wrong, mut porcupine_files) = (Vec::new(), Vec::new());
    let mut largest_memo = (0, "");
    println!(
        "{:<22} {:>6} {:>12} {:>12} {:>12}  verdict",
        "file", "ops", "time_us", "ops_per_s", "mean_us"
    );
    for row in csv.lines().skip(1).filter(|l| !l.trim().is_empty()) {
        let file = row.split(',').next().unwrap_or_default();
        let path = dir.join(file);
        let (elapsed, mean, ops, verdict, memo) = if file.starts_with("etcd/") {
            let ops = etcd::read(&path).expect("readable etcd log");
            let timed = time(&CasRegister, &ops);
            if row.split(',').nth(1) == Some("true") {
                let part = all_etcd.len();
                all_etcd.push(
                    ops.into_iter()
                        .map(|op| keyed(part, op))
                        .collect::<Vec<_>>(),
                );
                etcd_total += timed.0;
            }
            timed
        } else {
            time(&KvStore, &kv::read(&path).expect("readable kv history"))
        };
        total += elapsed;
        total_ops += ops;
        largest_memo = largest_memo.max((memo, file));
        if PORCUPINE.iter().any(|(_, member)| member(file)) {
            porcupine_files.push(path.clone());
        }
        for ((_, member), sums) in PORCUPINE.iter().zip(&mut porcupine) {
            if member(file) {
                sums.files += 1;
                sums.ops += ops;
                sums.fastest += elapsed;
                sums.mean += mean;
            }
        }
        let expected = match row.split(',').nth(1) {
            Some("true") => "linearizable",
            _ => "not linearizable",
        };
        if verdict != expected {
            wrong.push(file);
        }
        println!(
            "{file:<22} {ops:>6} {:>12.1} {:>12.0} {:>12.1}  {verdict}",
            elapsed.as_secs_f64() * 1e6,
            ops as f64 / elapsed.as_secs_f64(),
            mean.as_secs_f64() * 1e6,
        );
    }
    let etcd_files = all_etcd.len();
    let all_etcd: Vec<_> = all_etcd.into_iter().flatten().collect();
    let (elapsed, _, ops, verdict, _) = time(&PerFile(CasRegister), &all_etcd);
    println!(
        "{:<22} {ops:>6} {:>12.1} {:>12.0}  {verdict} ({etcd_files} partitions, one per file; \
         their rows sum to {:.1} us)",
        "linearizable etcd/*",
        elapsed.as_secs_f64() * 1e6,
        ops as f64 / elapsed.as_secs_f64(),
        etcd_total.as_secs_f64() * 1e6,
    );
    println!(
        "total: {total_ops} ops in {:.3} ms, {:.0} ops/s (sum of each file's fastest round)",
        total.as_secs_f64() * 1e3,
        total_ops as f64 / total.as_secs_f64()
    );
    for ((name, _), sums) in PORCUPINE.iter().zip(&porcupine) {
        println!(
            "{name}: {} files, {} ops, sum of means {:.1} us, sum of fastest {:.1} us",
            sums.files,
            sums.ops,
            sums.mean.as_secs_f64() * 1e6,
            sums.fastest.as_secs_f64() * 1e6,
        );
    }
    largest_memo_row(largest_memo);
    whole_process_row(&porcupine_files);
    budget_rows();
    if wrong.is_empty() {
        println!("verdicts: every file as expected.csv says");
    } else {
        println!(
            "verdicts: NOT as expected.csv says for {}",
            wrong.join(", ")
        );
    }
}

/// The largest memo (entries) of a Jepsen file's check, and which file, beside the default cap.
fn largest_memo_row((entries, file): (u64, &str)) {
    let cap = Budget::default().max_memo_entries;
    println!(
        "largest memo of a file: {entries} entries ({file}; the default cap is {cap} per check)"
    );
}

/// `leasesim check` (no `--model`: each file's own) on porcupine's file set as a user runs it,
/// one process start to exit, [`PROCESS_RUNS`] times: compare the mean with the sum of porcupine's
/// means (issue 21's "whole process" ratio).
fn whole_process_row(files: &[PathBuf]) {
    let mut times = Vec::with_capacity(PROCESS_RUNS);
    for _ in 0..PROCESS_RUNS {
        let start = Instant::now();
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_leasesim"))
            .arg("check")
            .args(files)
            .output()
            .expect("run leasesim check");
        times.push(start.elapsed());
        // Some of porcupine's files are not linearizable: exit 1, never 2 or 3.
        assert_eq!(
            out.status.code(),
            Some(1),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let mean = times.iter().sum::<Duration>() / times.len() as u32;
    println!(
        "whole process, leasesim check on those {} files: mean {:.2} ms, fastest {:.2} ms ({} runs)",
        files.len(),
        mean.as_secs_f64() * 1e3,
        times.iter().min().unwrap_or(&Duration::ZERO).as_secs_f64() * 1e3,
        times.len(),
    );
}

/// The fastest and the mean check time, the op count, the verdict and the largest memo
/// (entries).
fn time<M: Model>(
    model: &M,
    ops: &[Operation<M::Input, M::Output>],
) -> (Duration, Duration, usize, &'static str, u64) {
    let mut best = Duration::MAX;
    let mut measured = None;
    let (mut rounds, mut spent) = (0u32, Duration::ZERO);
    while rounds < ROUNDS || spent < MIN_TIME {
        let start = Instant::now();
        measured = Some(check_measured(model, ops, Budget::default()));
        let elapsed = start.elapsed();
        best = best.min(elapsed);
        spent += elapsed;
        rounds += 1;
    }
    let (verdict, work) = measured.expect("one round at least");
    let name = verdict_name(&verdict);
    (best, spent / rounds, ops.len(), name, work.memo_entries)
}

/// A model's operations tagged with a partition number: independent copies of the model.
struct PerFile<M>(M);

impl<M: Model> Model for PerFile<M> {
    type State = M::State;
    type Input = (usize, M::Input);
    type Output = M::Output;
    type Key = usize;

    fn init(&self) -> M::State {
        self.0.init()
    }

    fn step(
        &self,
        state: &M::State,
        input: &(usize, M::Input),
        output: Option<&M::Output>,
    ) -> Option<M::State> {
        self.0.step(state, &input.1, output)
    }

    fn key(&self, input: &(usize, M::Input)) -> usize {
        input.0
    }

    fn is_read_only(&self, input: &(usize, M::Input), output: &M::Output) -> bool {
        self.0.is_read_only(&input.1, output)
    }
}

fn keyed<I, O>(part: usize, op: Operation<I, O>) -> Operation<(usize, I), O> {
    Operation {
        process: op.process,
        input: (part, op.input),
        output: op.output,
        call: op.call,
        ret: op.ret,
    }
}

/// The budget rows: a 100k-op history checked with a budget of 1000 steps, timed once (the
/// point is that it ends at once, not how fast), with the work the check counted.
fn budget_rows() {
    const N: u64 = 100_000;
    let appends: Vec<Operation<LedgerInput, LedgerOutput>> = (0..N)
        .map(|i| Operation {
            process: 0,
            input: LedgerInput {
                session: "s1".into(),
                call: LedgerCall::Append {
                    expected: i,
                    record: format!("event {}", i + 1),
                    may_commit: true,
                },
            },
            output: Some(LedgerOutput::Appended(i + 1)),
            call: 10 * i,
            ret: Some(10 * i + 5),
        })
        .collect();
    budget_row(
        "100k sequential appends, --budget 1000",
        &CasLedger,
        &appends,
    );
    let reads = families::equal_reads(N);
    budget_row("100k equal reads, --budget 1000", &CasRegister, &reads);
}

fn budget_row<M: Model>(name: &str, model: &M, ops: &[Operation<M::Input, M::Output>]) {
    let start = Instant::now();
    let (verdict, work) = check_counted(model, ops, Budget::steps(1000));
    let elapsed = start.elapsed();
    println!(
        "{name}: {} ops, {:.1} ms, counted work {work}, {}",
        ops.len(),
        elapsed.as_secs_f64() * 1e3,
        verdict_name(&verdict)
    );
}

/// The client counts of the generated families.
const FAMILY_CLIENTS: [u64; 3] = [5, 20, 50];

/// `:info` operations per mille in the main families, and in the info-heavy ones.
const INFO_PER_MILLE: u64 = 10;
const HEAVY_INFO_PER_MILLE: u64 = 50;

/// One family's name: model, clients, violation, and `-heavy` for the info-heavy ones.
fn family_name(
    model: &str,
    clients: u64,
    violation: Option<families::Violation>,
    heavy: bool,
) -> String {
    let heavy = if heavy { "-heavy" } else { "" };
    format!(
        "{model}-c{clients:02}-{}{heavy}",
        families::Violation::name(violation)
    )
}

/// The family rows: each family checked with the default budget (fastest of [`ROUNDS`] rounds
/// or of what fits in a second), in a process of its own for its peak RSS, and once with a
/// budget of 100,000 steps; every history without injected violation must be linearizable
/// (or unknown) and every other not linearizable (or unknown), or the row says `WRONG`. The
/// register (1,000 ops, one partition), kv (10,000 ops, 10 keys) and ledger (2,000 ops, 4
/// sessions) families have 1% `:info` ops; then the info-heavy ones (5%, without violation and
/// with one in the middle). Writes the register and kv families to `dir` if given (to a
/// temporary directory otherwise: `leasesim check` reads them from there).
fn family_rows(dir: Option<&Path>) {
    let scratch = tempfile::tempdir().expect("can create a temporary directory");
    let dir = dir.unwrap_or(scratch.path());
    std::fs::create_dir_all(dir).expect("can create the families directory");
    std::fs::write(dir.join("expected.csv"), "file,expected_linearizable,ops\n")
        .expect("can write expected.csv");
    println!(
        "{:<28} {:>6} {:>5} {:>10} {:>17} {:>10} {:>9} {:>8} {:>10} {:>17}",
        "family",
        "ops",
        "info",
        "time_ms",
        "verdict",
        "steps",
        "memo",
        "rss_mib",
        "b1e5_ms",
        "verdict_b1e5"
    );
    let all: Vec<_> = std::iter::once(None)
        .chain(families::Violation::ALL.map(Some))
        .collect();
    let heavy = [None, Some(families::Violation::Middle)];
    for (info_per_mille, variants) in [(INFO_PER_MILLE, &all[..]), (HEAVY_INFO_PER_MILLE, &heavy)] {
        for &clients in &FAMILY_CLIENTS {
            for &violation in variants {
                let family = Family {
                    clients,
                    violation,
                    info_per_mille,
                };
                family.rows(dir, family_budget());
            }
        }
    }
}

/// The budget of the family rows: the default, or its memo cap set by `CHECK_MEMO_ENTRIES`.
fn family_budget() -> Budget {
    let budget = Budget::default();
    match std::env::var("CHECK_MEMO_ENTRIES") {
        Ok(entries) => budget.memo_entries(entries.parse().expect("CHECK_MEMO_ENTRIES: a number")),
        Err(_) => budget,
    }
}

/// The environment variable that makes this benchmark check one ledger family alone (its
/// [`Family::spec`]) and exit with `leasesim check`'s code: the ledger rows' process.
const LEDGER_FAMILY: &str = "CHECK_LEDGER_FAMILY_ALONE";

/// One generated family: its clients, injected violation and `:info` share.
#[derive(Clone, Copy)]
struct Family {
    clients: u64,
    violation: Option<families::Violation>,
    info_per_mille: u64,
}

impl Family {
    /// The family's shape at `ops` operations.
    fn shape(self, ops: usize) -> families::Shape {
        families::Shape {
            clients: self.clients,
            ops,
            info_per_mille: self.info_per_mille,
            violation: self.violation,
            seed: 17_000 + self.clients * 10 + self.violation.map_or(0, |v| v as u64 + 1),
        }
    }

    fn name(self, model: &str) -> String {
        family_name(
            model,
            self.clients,
            self.violation,
            self.info_per_mille == HEAVY_INFO_PER_MILLE,
        )
    }

    /// `clients,info_per_mille,violation` (the violation's place in [`families::Violation::ALL`],
    /// or `-`): what [`LEDGER_FAMILY`] carries to the child process.
    fn spec(self) -> String {
        let violation = families::Violation::ALL
            .iter()
            .position(|&v| Some(v) == self.violation)
            .map_or("-".to_string(), |at| at.to_string());
        format!("{},{},{violation}", self.clients, self.info_per_mille)
    }

    fn from_spec(spec: &str) -> Self {
        let parts: Vec<&str> = spec.split(',').collect();
        let number = |at: usize| parts[at].parse::<u64>().expect("a family spec");
        Family {
            clients: number(0),
            info_per_mille: number(1),
            violation: parts[2]
                .parse::<usize>()
                .ok()
                .map(|at| families::Violation::ALL[at]),
        }
    }

    /// The family's three rows: register and kv (written to `dir` for `leasesim check`), and
    /// ledger.
    fn rows(self, dir: &Path, budget: Budget) {
        let ok = self.violation.is_none();
        let register = families::register(&self.shape(1000));
        let file = format!("{}.log", self.name("register"));
        write_family(
            Some(dir),
            &file,
            &families::etcd_text(&register),
            &register,
            ok,
        );
        let process = leasesim_check(&dir.join(file), budget);
        family_row(
            &self.name("register"),
            (&CasRegister, &register),
            ok,
            budget,
            process,
        );
        let kv = families::kv(&self.shape(10_000));
        let file = format!("{}.txt", self.name("kv"));
        write_family(Some(dir), &file, &families::kv_text(&kv), &kv, ok);
        let process = leasesim_check(&dir.join(file), budget);
        family_row(&self.name("kv"), (&KvStore, &kv), ok, budget, process);
        let ledger = families::ledger(&self.shape(2000));
        let mut process = Command::new(std::env::current_exe().expect("this benchmark's path"));
        process.env(LEDGER_FAMILY, self.spec());
        family_row(
            &self.name("ledger"),
            (&CasLedger, &ledger),
            ok,
            budget,
            process,
        );
    }
}

/// `leasesim check` on `file` with `budget`.
fn leasesim_check(file: &Path, budget: Budget) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_leasesim"));
    command
        .arg("check")
        .arg("--budget")
        .arg(budget.max_steps_per_partition.to_string())
        .arg("--memo-entries")
        .arg(budget.max_memo_entries.to_string())
        .arg(file);
    command
}

/// The child process of a ledger row: checks the family of `spec` ([`Family::spec`]) with the
/// family rows' budget and exits as `leasesim check` would (0, 1 or 4).
fn ledger_family_alone(spec: &str) {
    let ledger = families::ledger(&Family::from_spec(spec).shape(2000));
    let code = match check(&CasLedger, &ledger, family_budget()) {
        Verdict::Linearizable => 0,
        Verdict::NotLinearizable(_) => 1,
        Verdict::Unknown(_) => 4,
    };
    std::process::exit(code);
}

/// Runs `command` to its end, its output discarded, and returns its peak RSS in KiB (the
/// `ru_maxrss` that `wait4` reports for that child alone; `getrusage(RUSAGE_CHILDREN)` would
/// give the largest of every child so far) and its exit code.
///
/// The child is started with `fork`, not std's `posix_spawn`: Linux carries the peak RSS of
/// the memory an `exec` replaces into the new program's `ru_maxrss`, and `posix_spawn`'s
/// child shares this process's memory until its `exec`, so it would report this process's
/// own peak (the in-process checks of the largest family so far). A forked child's carries
/// only what this process holds when it forks: the generated family, a few MiB, once
/// `malloc_trim` has given back to the system what the earlier checks freed.
#[allow(clippy::zombie_processes)] // `wait4` reaps it.
fn peak_rss(mut command: Command) -> (u64, Option<i32>) {
    use std::os::unix::process::CommandExt;
    // SAFETY: glibc's malloc_trim only releases free memory; it has no precondition.
    unsafe { libc::malloc_trim(0) };
    // SAFETY: the hook does nothing; its presence makes std fork and exec.
    unsafe { command.pre_exec(|| Ok(())) };
    let child = command
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("can start the family's process");
    let pid = child.id() as libc::pid_t;
    let mut status = 0;
    // SAFETY: `wait4` writes the status and the usage into the two locals it is given, and
    // reaps the child that `child` (never waited on by std) started.
    let (reaped, usage) = unsafe {
        let mut usage: libc::rusage = std::mem::zeroed();
        (libc::wait4(pid, &mut status, 0, &mut usage), usage)
    };
    assert_eq!(reaped, pid, "wait4 reaps the family's process");
    let code = libc::WIFEXITED(status).then(|| libc::WEXITSTATUS(status));
    (usage.ru_maxrss as u64, code)
}

/// Writes one family's text and its `expected.csv` row, if there is a directory.
fn write_family<I, O>(
    dir: Option<&Path>,
    file: &str,
    text: &str,
    ops: &[Operation<I, O>],
    linearizable: bool,
) {
    let Some(dir) = dir else { return };
    std::fs::write(dir.join(file), text).expect("can write a family file");
    let row = format!("{file},{linearizable},{}\n", ops.len());
    let csv = dir.join("expected.csv");
    let mut all = std::fs::read_to_string(&csv).unwrap_or_default();
    all.push_str(&row);
    std::fs::write(csv, all).expect("can write expected.csv");
}

/// A model's operations.
type Ops<M> = [Operation<<M as Model>::Input, <M as Model>::Output>];

/// One family's row: `budget` (fastest of a few checks, with the steps and largest memo of
/// the last), `process` (the same check in a process of its own: its peak RSS, and its exit
/// code where it disagrees), then a budget of 100,000 steps. A row's time is the check's
/// alone, without reading or generating.
fn family_row<M: Model>(
    name: &str,
    (model, ops): (&M, &Ops<M>),
    linearizable: bool,
    budget: Budget,
    process: Command,
) {
    let info = ops.iter().filter(|op| op.output.is_none()).count();
    let (rss_kib, code) = peak_rss(process);
    let (mut best, mut spent, mut rounds) = (Duration::MAX, Duration::ZERO, 0);
    let mut measured = None;
    while rounds < ROUNDS && spent < Duration::from_secs(1) {
        let start = Instant::now();
        measured = Some(check_measured(model, ops, budget));
        let elapsed = start.elapsed();
        best = best.min(elapsed);
        spent += elapsed;
        rounds += 1;
    }
    let (verdict, work) = measured.expect("one round at least");
    let start = Instant::now();
    let bounded = check(model, ops, Budget::steps(100_000));
    let bounded_time = start.elapsed();
    let words = |verdict: &Verdict| match (verdict, linearizable) {
        (Verdict::Linearizable, true)
        | (Verdict::NotLinearizable(_), false)
        | (Verdict::Unknown(_), _) => verdict_name(verdict).to_string(),
        _ => format!("WRONG: {}", verdict_name(verdict)),
    };
    let expected_code = match verdict {
        Verdict::Linearizable => 0,
        Verdict::NotLinearizable(_) => 1,
        Verdict::Unknown(_) => 4,
    };
    let disagrees = match code {
        Some(code) if code == expected_code => String::new(),
        code => format!(" (its process: exit {code:?})"),
    };
    println!(
        "{name:<28} {:>6} {info:>5} {:>10.2} {:>17} {:>10} {:>9} {:>8.1} {:>10.2} {:>17}{disagrees}",
        ops.len(),
        best.as_secs_f64() * 1e3,
        words(&verdict),
        work.steps,
        work.memo_entries,
        rss_kib as f64 / 1024.0,
        bounded_time.as_secs_f64() * 1e3,
        words(&bounded),
    );
}

fn verdict_name(verdict: &Verdict) -> &'static str {
    match verdict {
        Verdict::Linearizable => "linearizable",
        Verdict::NotLinearizable(_) => "not linearizable",
        Verdict::Unknown(Exhausted::Steps) => "unknown (steps)",
        Verdict::Unknown(Exhausted::Memo) => "unknown (memo)",
    }
}

/// The growth rows (issue 21): generated lease and ledger histories (`generated.rs`: five
/// replicas, one session) of 1k, 10k and 100k operations, read from our history format and
/// checked whole, correct and with one wrong answer planted half way; then each with a budget
/// of a tenth of its operations in steps, which must end `unknown` (never a false verdict).
/// A row gives the extraction (validation, unknown-outcome resolution, windows) and the
/// search time, the µs per operation of both, and the search steps counted.
fn growth_rows() {
    println!(
        "{:<24} {:>7} {:>10} {:>10} {:>8} {:>10}  {:<17} {:>12}  verdict_b",
        "generated", "ops", "extract_ms", "check_ms", "us_op", "steps", "verdict", "budget_ms"
    );
    for ops in [1_000, 10_000, 100_000] {
        for planted in [false, true] {
            let shape = |corruption| generated::Shape {
                corruption: planted.then_some(corruption),
                ..generated::Shape::new(ops, 21)
            };
            let lease = generated::lease_history(&shape(generated::Corruption::DoubleGrant {
                after: ops / 2,
            }));
            growth_row("lease", &lease, !planted, |h| {
                let e = lease_operations(h).expect("a valid history");
                (e.model, e.ops)
            });
            let ledger = generated::ledger_history(&shape(generated::Corruption::StaleTip {
                after: ops / 2,
            }));
            growth_row("ledger", &ledger, !planted, |h| {
                let e = ledger_operations(h).expect("a valid history");
                (e.model, e.ops)
            });
        }
    }
}

fn growth_row<M: Model>(
    name: &str,
    history: &History,
    linearizable: bool,
    extract: impl Fn(&History) -> (M, Vec<Operation<M::Input, M::Output>>),
) {
    let start = Instant::now();
    let (model, ops) = extract(history);
    let extracted = start.elapsed();
    let start = Instant::now();
    let (verdict, steps) = check_counted(&model, &ops, Budget::default());
    let searched = start.elapsed();
    let budget = Budget::steps(ops.len() as u64 / 10);
    let start = Instant::now();
    let bounded = check(&model, &ops, budget);
    let bounded_time = start.elapsed();
    let words = |verdict: &Verdict| match (verdict, linearizable) {
        (Verdict::Linearizable, true)
        | (Verdict::NotLinearizable(_), false)
        | (Verdict::Unknown(_), _) => verdict_name(verdict).to_string(),
        _ => format!("WRONG: {}", verdict_name(verdict)),
    };
    let name = format!("{name}-{}", if linearizable { "ok" } else { "bad-middle" });
    println!(
        "{name:<24} {:>7} {:>10.2} {:>10.2} {:>8.2} {steps:>10}  {:<17} {:>12.2}  {}",
        ops.len(),
        extracted.as_secs_f64() * 1e3,
        searched.as_secs_f64() * 1e3,
        (extracted + searched).as_secs_f64() * 1e6 / ops.len() as f64,
        words(&verdict),
        bounded_time.as_secs_f64() * 1e3,
        words(&bounded),
    );
}
