//! Benchmark: checks every history in `../shared/cases/jepsen` (the files listed in its
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
//! and `c10-bad`); Go's ns/op is a mean, so compare it with the sum of means. Every verdict is
//! compared with `expected.csv` (porcupine's benchmarks assert the same verdicts). The last
//! two rows check generated 100k-op histories with `--budget 1000` (bad-input probe D6): the
//! whole check, pruning included, must stop at the budget, quickly, with `unknown`. Run with
//! `cargo bench --bench check`.

// Measuring real time is the point of a benchmark (DESIGN.md lets checkers use real time).
#![allow(clippy::disallowed_types)]

use std::path::Path;
use std::time::{Duration, Instant};

use leasesim::check::jepsen::{etcd, kv};
use leasesim::check::linearizability::kv::KvStore;
use leasesim::check::linearizability::ledger::{CasLedger, LedgerCall, LedgerInput, LedgerOutput};
use leasesim::check::linearizability::register::{CasRegister, RegisterInput, RegisterOutput};
use leasesim::check::linearizability::{Budget, Model, Operation, Verdict, check, check_counted};

/// Least repetitions per file.
const ROUNDS: u32 = 5;

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
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/cases/jepsen");
    let csv = std::fs::read_to_string(dir.join("expected.csv")).unwrap_or_else(|e| {
        panic!(
            "cannot read {}/expected.csv ({e}): put shared/ beside the clone",
            dir.display()
        )
    });
    let (mut total, mut total_ops) = (Duration::ZERO, 0usize);
    let (mut etcd_total, mut all_etcd) = (Duration::ZERO, Vec::new());
    let mut porcupine: [Totals; 2] = Default::default();
    let mut wrong = Vec::new();
    println!(
        "{:<22} {:>6} {:>12} {:>12} {:>12}  verdict",
        "file", "ops", "time_us", "ops_per_s", "mean_us"
    );
    for row in csv.lines().skip(1).filter(|l| !l.trim().is_empty()) {
        let file = row.split(',').next().unwrap_or_default();
        let path = dir.join(file);
        let (elapsed, mean, ops, verdict) = if file.starts_with("etcd/") {
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
    let (elapsed, _, ops, verdict) = time(&PerFile(CasRegister), &all_etcd);
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

/// The fastest and the mean check time, the op count and the verdict.
fn time<M: Model>(
    model: &M,
    ops: &[Operation<M::Input, M::Output>],
) -> (Duration, Duration, usize, &'static str) {
    let mut best = Duration::MAX;
    let mut verdict = Verdict::Unknown;
    let (mut rounds, mut spent) = (0u32, Duration::ZERO);
    while rounds < ROUNDS || spent < MIN_TIME {
        let start = Instant::now();
        verdict = check(model, ops, Budget::default());
        let elapsed = start.elapsed();
        best = best.min(elapsed);
        spent += elapsed;
        rounds += 1;
    }
    let name = match verdict {
        Verdict::Linearizable => "linearizable",
        Verdict::NotLinearizable(_) => "not linearizable",
        Verdict::Unknown => "unknown",
    };
    (best, spent / rounds, ops.len(), name)
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
    let reads: Vec<Operation<RegisterInput, RegisterOutput>> = (0..N)
        .map(|i| Operation {
            process: i % 4,
            input: RegisterInput::Read,
            output: Some(RegisterOutput::Read(None)),
            call: 2 * i,
            ret: Some(2 * i + 1),
        })
        .collect();
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
        match verdict {
            Verdict::Unknown => "unknown",
            Verdict::Linearizable => "linearizable",
            Verdict::NotLinearizable(_) => "not linearizable",
        }
    );
}
