//! Benchmark: checks every history in `../shared/cases/jepsen` (the files listed in its
//! `expected.csv`) and prints the per-file and total check time and operations per second.
//! Reading the files is not timed. A last row checks the linearizable etcd files at once, as one
//! history with a partition per file, which the engine searches on parallel threads: compare
//! its time with the sum of those files' rows (their sequential time). Run with `cargo bench --bench check`.

// Measuring real time is the point of a benchmark (DESIGN.md lets checkers use real time).
#![allow(clippy::disallowed_types)]

use std::path::Path;
use std::time::{Duration, Instant};

use leasesim::check::jepsen::{etcd, kv};
use leasesim::check::linearizability::kv::KvStore;
use leasesim::check::linearizability::register::CasRegister;
use leasesim::check::linearizability::{Budget, Model, Operation, Verdict, check};

/// Repetitions per file; the fastest is reported.
const ROUNDS: usize = 5;

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
    println!(
        "{:<22} {:>6} {:>12} {:>12}  verdict",
        "file", "ops", "time_us", "ops_per_s"
    );
    for row in csv.lines().skip(1).filter(|l| !l.trim().is_empty()) {
        let file = row.split(',').next().unwrap_or_default();
        let path = dir.join(file);
        let (elapsed, ops, verdict) = if file.starts_with("etcd/") {
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
        println!(
            "{file:<22} {ops:>6} {:>12.1} {:>12.0}  {verdict}",
            elapsed.as_secs_f64() * 1e6,
            ops as f64 / elapsed.as_secs_f64()
        );
    }
    let etcd_files = all_etcd.len();
    let all_etcd: Vec<_> = all_etcd.into_iter().flatten().collect();
    let (elapsed, ops, verdict) = time(&PerFile(CasRegister), &all_etcd);
    println!(
        "{:<22} {ops:>6} {:>12.1} {:>12.0}  {verdict} ({etcd_files} partitions, one per file; \
         their rows sum to {:.1} us)",
        "linearizable etcd/*",
        elapsed.as_secs_f64() * 1e6,
        ops as f64 / elapsed.as_secs_f64(),
        etcd_total.as_secs_f64() * 1e6,
    );
    println!(
        "total: {total_ops} ops in {:.3} ms, {:.0} ops/s (fastest of {ROUNDS} rounds per file)",
        total.as_secs_f64() * 1e3,
        total_ops as f64 / total.as_secs_f64()
    );
}

fn time<M: Model>(
    model: &M,
    ops: &[Operation<M::Input, M::Output>],
) -> (Duration, usize, &'static str) {
    let mut best = Duration::MAX;
    let mut verdict = Verdict::Unknown;
    for _ in 0..ROUNDS {
        let start = Instant::now();
        verdict = check(model, ops, Budget::default());
        best = best.min(start.elapsed());
    }
    let name = match verdict {
        Verdict::Linearizable => "linearizable",
        Verdict::NotLinearizable(_) => "not linearizable",
        Verdict::Unknown => "unknown",
    };
    (best, ops.len(), name)
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
