//! Seeds to detection per mutant (issue "Mutants", deliverable 4): for every mutant killed by
//! a scenario, over 20 different seed ranges (starting at 0, 1000, 2000 …), how many seeds of
//! that scenario run before one reports a violation of a check the same run of the correct
//! implementation keeps (a false alarm is no find). Prints the median and the
//! worst per mutant, and how many ranges found nothing within `MAX_SEEDS`.
//!
//! With `DETECTION_SWARM_ONLY=1`, the swarm profiles alone (`sims/swarm-*.toml`,
//! `sims/kube-swarm-*.toml` and `sims/flock-swarm-*.toml`, no tailored scenario; issue 18,
//! "Swarm power"): for every mutant
//! a history can show (its kill names a scenario check), seeds run as a campaign runs them —
//! seed n against every swarm profile of the mutant's backend — until one breaks a check;
//! per range its seeds to detection and the profile that broke (`12:swarm-delays`), then the
//! median and the worst over the ranges, and the mutants some range did not find within
//! `MAX_SEEDS`. Ranges: `DETECTION_STARTS` (a comma list of first seeds, e.g. `0,1000`), else
//! `DETECTION_RANGES` (default 4: seeds from 0, 1000, 2000, 3000); they run in parallel on
//! `DETECTION_JOBS` threads (default the number of cores). `DETECTION_MUTANTS` (a comma list
//! of mutant names) measures only those.
//!
//! `DETECTION_ENGINE` (`turmoil`, the default, or `engine`) runs every world of either table
//! on that engine (docs/world.md#the-world-on-the-engine); any other value exits 2, saying so.
//!
//! `cargo bench --bench detection` (release build). Figures, not assertions; not run by CI.

use std::path::Path;
use std::time::Duration;

use leasesim::campaign::scenario::Scenario;
use leasesim::check::Check;
use leasesim::check::judge::judge;
use leasesim::check::linearizability::Budget;
use leasesim::mutant::Mutant;
use leasesim::mutants::{self, Kill};
use leasesim::sim::config::WorldEngine;
use leasesim::sim::runfile::{self, RunFile};

const RANGES: u64 = 20;
const RANGE_STRIDE: u64 = 1_000;
const MAX_SEEDS: u64 = 50;

/// The checks `run` violates; `None` when it does not run.
fn violated(run: &RunFile) -> Option<Vec<Check>> {
    let (history, _) = runfile::execute(run, Duration::from_secs(120)).ok()?;
    Some(judge(&history, Budget::default()).violated())
}

/// Whether `mutant` breaks a check of `scenario` on `seed`: a check its run violates that the
/// same run of the correct implementation keeps. A check both violate is the world's false
/// alarm, not a find — one made two mutants look found in 10 seeds on the engine
/// (docs/world.md#the-world-on-the-engine) — and is reported on stderr.
fn breaks(scenario: &Scenario, mutant: Mutant, seed: u64) -> bool {
    let Ok(mut run) = scenario.resolve(seed) else {
        return false;
    };
    if let Ok(engine) = engine() {
        run.world.engine = engine;
    }
    let correct = RunFile {
        mutant: None,
        ..run.clone()
    };
    run.mutant = Some(mutant.name().to_owned());
    let found = violated(&run).unwrap_or_default();
    if found.is_empty() {
        return false;
    }
    let alarms = violated(&correct).unwrap_or_default();
    let own = found.iter().any(|check| !alarms.contains(check));
    if !alarms.is_empty() {
        eprintln!(
            "false alarm: {} seed {seed} violates {alarms:?} without a mutant{}",
            scenario.name(),
            if own { "" } else { " (not counted as a find)" }
        );
    }
    own
}

/// Seeds run from `first` until `mutant` breaks a check of one of `scenarios` (each seed
/// against every scenario in turn), if within the limit.
fn seeds_to_detection(scenarios: &[Scenario], mutant: Mutant, first: u64) -> Option<u64> {
    (0..MAX_SEEDS).find_map(|n| {
        scenarios
            .iter()
            .any(|scenario| breaks(scenario, mutant, first + n))
            .then_some(n + 1)
    })
}

/// `(median, worst)` of the ranges that found the mutant, `-` for none.
fn median_worst(found: &[u64]) -> (String, String) {
    let mut sorted = found.to_vec();
    sorted.sort_unstable();
    let show = |n: Option<&u64>| n.map_or("-".into(), |n| n.to_string());
    (show(sorted.get(sorted.len() / 2)), show(sorted.last()))
}

/// The engine `DETECTION_ENGINE` names (default turmoil), or the message refusing its value.
fn engine() -> Result<WorldEngine, String> {
    match std::env::var("DETECTION_ENGINE") {
        Err(_) => Ok(WorldEngine::Turmoil),
        Ok(name) => WorldEngine::from_name(&name).ok_or_else(|| {
            format!("DETECTION_ENGINE={name}: unknown engine, expected `turmoil` or `engine`")
        }),
    }
}

fn env_number(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

// A benchmark measures real time by definition.
#[allow(clippy::disallowed_types, clippy::disallowed_methods)]
fn main() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    match engine() {
        Ok(engine) => println!("engine: {}", engine.name()),
        Err(message) => {
            eprintln!("error: {message}");
            std::process::exit(2);
        }
    }
    if std::env::var("DETECTION_SWARM_ONLY").is_ok() {
        swarm_only(root);
        return;
    }
    println!(
        "{:<32} {:<48} {:>6} {:>6} {:>9} {:>8}",
        "mutant", "scenario", "median", "worst", "not found", "wall s"
    );
    for &mutant in Mutant::ALL {
        let Kill::Scenario { scenario, .. } = mutants::kill(mutant) else {
            continue;
        };
        let loaded = Scenario::load(&root.join(scenario)).expect("the kill's scenario loads");
        let started = std::time::Instant::now();
        let mut found: Vec<u64> = Vec::new();
        let mut missed = 0;
        for range in 0..RANGES {
            match seeds_to_detection(std::slice::from_ref(&loaded), mutant, range * RANGE_STRIDE) {
                Some(n) => found.push(n),
                None => missed += 1,
            }
        }
        let (median, worst) = median_worst(&found);
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

/// A comma list from the environment variable `name`, if set (`DETECTION_STARTS=0,1000`).
fn env_list(name: &str) -> Option<Vec<String>> {
    let value = std::env::var(name).ok()?;
    Some(
        value
            .split(',')
            .map(|item| item.trim().to_owned())
            .filter(|item| !item.is_empty())
            .collect(),
    )
}

/// Seeds run from `first` until `mutant` breaks a check of one of `profiles` (each seed
/// against every profile in turn): `(seeds run, the profile that broke)`, if within the
/// limit.
fn swarm_detection(profiles: &[Scenario], mutant: Mutant, first: u64) -> Option<(u64, String)> {
    (0..MAX_SEEDS).find_map(|n| {
        profiles
            .iter()
            .find(|profile| breaks(profile, mutant, first + n))
            .map(|profile| (n + 1, profile.name()))
    })
}

/// The swarm-only table (see the module page).
#[allow(clippy::disallowed_types, clippy::disallowed_methods)]
fn swarm_only(root: &Path) {
    let profiles = swarm_profiles(root);
    let starts = range_starts();
    let chosen = chosen_mutants();
    let jobs = env_number(
        "DETECTION_JOBS",
        std::thread::available_parallelism().map_or(1, |n| n.get() as u64),
    )
    .max(1) as usize;
    let shown: Vec<String> = starts.iter().map(u64::to_string).collect();
    println!(
        "swarm profiles only ({} files), ranges of {MAX_SEEDS} seeds from {}",
        profiles.len(),
        shown.join(", ")
    );
    println!(
        "{:<34} {:<48} {:>6} {:>6} {:>9} {:>8}",
        "mutant",
        "seeds per range:first profile to break",
        "median",
        "worst",
        "not found",
        "wall s"
    );
    let all_started = std::time::Instant::now();
    let mut survivors: Vec<&str> = Vec::new();
    for &mutant in Mutant::ALL.iter().filter(|m| chosen.contains(m)) {
        if !matches!(mutants::kill(mutant), Kill::Scenario { .. }) {
            continue;
        }
        let own: Vec<Scenario> = profiles
            .iter()
            .filter(|p| mutants::applies_to(mutant, p.world.backend.name()))
            .cloned()
            .collect();
        let started = std::time::Instant::now();
        let results = detect_in_ranges(&own, mutant, &starts, jobs);
        if !print_swarm_row(mutant, &results, started.elapsed().as_secs_f64()) {
            survivors.push(mutant.name());
        }
    }
    println!(
        "not found within {MAX_SEEDS} seeds in some range: {}",
        if survivors.is_empty() {
            "none".to_owned()
        } else {
            survivors.join(", ")
        }
    );
    println!("wall time: {:.1} s", all_started.elapsed().as_secs_f64());
}

/// The swarm profiles in `root`'s `sims/` (`swarm-*.toml`, `kube-swarm-*.toml`,
/// `flock-swarm-*.toml`), by path.
fn swarm_profiles(root: &Path) -> Vec<Scenario> {
    let mut paths: Vec<_> = std::fs::read_dir(root.join("sims"))
        .expect("sims/ is readable")
        .map(|entry| entry.expect("a sims/ entry").path())
        .filter(|path| {
            let name = path.file_name().unwrap_or_default().to_string_lossy();
            (name.starts_with("swarm-")
                || name.starts_with("kube-swarm-")
                || name.starts_with("flock-swarm-"))
                && name.ends_with(".toml")
        })
        .collect();
    paths.sort();
    paths
        .iter()
        .map(|path| Scenario::load(path).expect("a swarm profile loads"))
        .collect()
}

/// The first seed of each range: `DETECTION_STARTS`, else `DETECTION_RANGES` (4) ranges
/// [`RANGE_STRIDE`] apart from 0.
fn range_starts() -> Vec<u64> {
    match env_list("DETECTION_STARTS") {
        Some(list) => list
            .iter()
            .map(|s| {
                s.parse()
                    .expect("DETECTION_STARTS is a comma list of seeds")
            })
            .collect(),
        None => (0..env_number("DETECTION_RANGES", 4).max(1))
            .map(|range| range * RANGE_STRIDE)
            .collect(),
    }
}

/// The mutants `DETECTION_MUTANTS` names, else all.
fn chosen_mutants() -> Vec<Mutant> {
    match env_list("DETECTION_MUTANTS") {
        Some(names) => names
            .iter()
            .map(|name| Mutant::parse(name).unwrap_or_else(|e| panic!("DETECTION_MUTANTS: {e}")))
            .collect(),
        None => Mutant::ALL.to_vec(),
    }
}

/// [`swarm_detection`] of `mutant` from each of `starts`, on `jobs` threads: `(range index,
/// what it found)`, in range order.
fn detect_in_ranges(
    profiles: &[Scenario],
    mutant: Mutant,
    starts: &[u64],
    jobs: usize,
) -> Vec<(usize, Option<(u64, String)>)> {
    let next = std::sync::Mutex::new(starts.iter().copied().enumerate());
    let results = std::sync::Mutex::new(Vec::new());
    std::thread::scope(|scope| {
        for _ in 0..jobs.min(starts.len()) {
            scope.spawn(|| {
                loop {
                    let range = next.lock().unwrap_or_else(|p| p.into_inner()).next();
                    let Some((index, first)) = range else { return };
                    let found = swarm_detection(profiles, mutant, first);
                    results
                        .lock()
                        .unwrap_or_else(|p| p.into_inner())
                        .push((index, found));
                }
            });
        }
    });
    let mut results = results.into_inner().unwrap_or_else(|p| p.into_inner());
    results.sort_unstable();
    results
}

/// Prints `mutant`'s row of the swarm-only table from its ranges' `results`, `wall_s`
/// seconds; whether every range found it.
fn print_swarm_row(
    mutant: Mutant,
    results: &[(usize, Option<(u64, String)>)],
    wall_s: f64,
) -> bool {
    let per_range: Vec<String> = results
        .iter()
        .map(|(_, found)| match found {
            Some((n, profile)) => format!("{n}:{profile}"),
            None => "-".into(),
        })
        .collect();
    let found: Vec<u64> = results
        .iter()
        .filter_map(|(_, found)| found.as_ref().map(|(n, _)| *n))
        .collect();
    let missed = results.len() - found.len();
    let (median, worst) = median_worst(&found);
    println!(
        "{:<34} {:<48} {:>6} {:>6} {:>9} {:>8.1}",
        mutant.name(),
        per_range.join(","),
        median,
        worst,
        missed,
        wall_s
    );
    missed == 0
}
