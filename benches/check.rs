//! Benchmark: checks every history in `../shared/cases/jepsen` (the files listed in its
//! `expected.csv`) and prints the per-file and total check time and operations per second.
//! Reading the files is not timed. Run with `cargo bench --bench check`.

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
    println!(
        "{:<22} {:>6} {:>12} {:>12}  verdict",
        "file", "ops", "time_us", "ops_per_s"
    );
    for row in csv.lines().skip(1).filter(|l| !l.trim().is_empty()) {
        let file = row.split(',').next().unwrap_or_default();
        let path = dir.join(file);
        let (elapsed, ops, verdict) = if file.starts_with("etcd/") {
            time(&CasRegister, &etcd::read(&path).expect("readable etcd log"))
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
