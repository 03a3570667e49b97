//! Seeds to detection per mutant (issue "Mutants", deliverable 4): for every mutant killed by
//! a scenario, over 20 different seed ranges (starting at 0, 1000, 2000 …), how many seeds of
//! that scenario run before one reports a violation of any check. Prints the median and the
//! worst per mutant, and how many ranges found nothing within `MAX_SEEDS`.
//!
//! `cargo bench --bench detection` (release build). Figures, not assertions.

use std::path::Path;
use std::time::Duration;

use leasesim::campaign::scenario::Scenario;
use leasesim::check::judge::judge;
use leasesim::check::linearizability::Budget;
use leasesim::mutant::{Kill, Mutant};
use leasesim::sim::runfile;

const RANGES: u64 = 20;
const RANGE_STRIDE: u64 = 1_000;
const MAX_SEEDS: u64 = 50;

/// Seeds run from `first` until `mutant` breaks a check on `scenario`, if within the limit.
fn seeds_to_detection(scenario: &Scenario, mutant: Mutant, first: u64) -> Option<u64> {
    (0..MAX_SEEDS).find_map(|n| {
        let mut run = scenario.resolve(first + n).ok()?;
        run.mutant = Some(mutant.name().to_owned());
        let (history, _) = runfile::execute(&run, Duration::from_secs(120)).ok()?;
        let violated = !judge(&history, Budget::default()).violated().is_empty();
        violated.then_some(n + 1)
    })
}

// A benchmark measures real time by definition.
#[allow(clippy::disallowed_types, clippy::disallowed_methods)]
fn main() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    println!(
        "{:<32} {:<48} {:>6} {:>6} {:>9} {:>8}",
        "mutant", "scenario", "median", "worst", "not found", "wall s"
    );
    for &mutant in Mutant::ALL {
        let Kill::Scenario { scenario, .. } = mutant.kill() else {
            continue;
        };
        let loaded = Scenario::load(&root.join(scenario)).expect("the kill's scenario loads");
        let started = std::time::Instant::now();
        let mut found: Vec<u64> = Vec::new();
        let mut missed = 0;
        for range in 0..RANGES {
            match seeds_to_detection(&loaded, mutant, range * RANGE_STRIDE) {
                Some(n) => found.push(n),
                None => missed += 1,
            }
        }
        found.sort_unstable();
        let median = found
            .get(found.len() / 2)
            .map_or("-".into(), |n| n.to_string());
        let worst = found.last().map_or("-".into(), |n| n.to_string());
        println!(
            "{:<32} {:<48} {:>6} {:>6} {:>9} {:>8.1}",
            mutant.name(),
            scenario,
            median,
            worst,
            missed,
            started.elapsed().as_secs_f64()
        );
    }
}
