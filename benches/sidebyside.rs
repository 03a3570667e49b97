//! The world on turmoil beside the world on leasesim's engine: issue 44's side-by-side tables
//! (docs/benchmarks.md#the-two-engines-side-by-side; what differs and why:
//! docs/world.md#the-world-on-the-engine). Figures, not assertions; not run by CI.
//!
//! - **scenarios**: every `sims/*.toml` scenario × a seed range, the verdict on turmoil and on
//!   the engine (`clean`, the checks violated, or why the run did not happen) and each side's
//!   wall time in ms; a row whose verdicts differ starts with `*`.
//! - **mutants**: every mutant whose kill is a scenario (`mutants::kill`), run on that scenario
//!   and seed with the mutant planted, both verdicts; a row starts with `*` when one engine
//!   reports the kill's check and the other does not. Mutants killed outside the world (loom,
//!   conformance, process tests) do not depend on the engine and are left out.
//! - **wall**: wall time of a fault-free generated run of 60 simulated s, seed 1, on both
//!   engines, history built but not judged.
//!
//! Rows are tab-separated on stdout (the wall table's lines are prose), in the order above.
//!
//! `cargo bench --bench sidebyside`: all three tables (about six minutes on 2 cores).
//! Settings (environment; a bad value ends the bench with exit 2):
//! - `SIDEBYSIDE_TABLE`: any of `scenarios`, `mutants`, `wall`, comma-separated (default all);
//! - `SIDEBYSIDE_SEEDS`: the scenarios table's seeds, `A..B` (default `0..20`);
//! - `SIDEBYSIDE_ONLY`: the scenarios table's scenarios, `sims/` names without `.toml`,
//!   comma-separated (default every one);
//! - `SIDEBYSIDE_MUTANTS`: the mutants table's mutants, names as `leasesim mutants` lists
//!   them, comma-separated (default every one whose kill is a scenario);
//! - `SIDEBYSIDE_REPLICAS`: the wall table's world sizes, comma-separated (default `3`).
#![allow(
    clippy::disallowed_types,
    reason = "a benchmark reads real time, outside the runs"
)]

use std::path::PathBuf;
use std::time::{Duration, Instant};

use leasesim::campaign::scenario::Scenario;
use leasesim::check::judge::judge;
use leasesim::check::linearizability::Budget;
use leasesim::history::History;
use leasesim::mutant::Mutant;
use leasesim::mutants::{self, Kill};
use leasesim::sim::config::WorldEngine;
use leasesim::sim::runner;
use leasesim::sim::world::World;

#[path = "common/settings.rs"]
mod settings;
use settings::{list, one, seed_range};

/// The engines, in the order the tables give them.
const ENGINES: [WorldEngine; 2] = [WorldEngine::Turmoil, WorldEngine::Engine];
/// How long one scenario run may take before it is reported as an error.
const TIMEOUT: Duration = Duration::from_secs(300);

/// What the bench prints.
struct Settings {
    tables: Vec<String>,
    seeds: (u64, u64),
    only: Option<Vec<String>>,
    mutants: Option<Vec<Mutant>>,
    replicas: Vec<u32>,
}

impl Settings {
    fn from_env() -> Self {
        Settings {
            tables: list("SIDEBYSIDE_TABLE", "scenarios,mutants,wall", table),
            seeds: one("SIDEBYSIDE_SEEDS", "0..20", seed_range),
            only: std::env::var("SIDEBYSIDE_ONLY")
                .ok()
                .map(|_| list("SIDEBYSIDE_ONLY", "", scenario_name)),
            mutants: std::env::var("SIDEBYSIDE_MUTANTS")
                .ok()
                .map(|_| list("SIDEBYSIDE_MUTANTS", "", mutant_name)),
            replicas: list("SIDEBYSIDE_REPLICAS", "3", replicas),
        }
    }

    fn prints(&self, table: &str) -> bool {
        self.tables.iter().any(|t| t == table)
    }
}

fn table(text: &str) -> Result<String, &'static str> {
    match text {
        "scenarios" | "mutants" | "wall" => Ok(text.to_owned()),
        _ => Err("one of `scenarios`, `mutants`, `wall`"),
    }
}

fn scenario_name(text: &str) -> Result<String, &'static str> {
    if sims().join(format!("{text}.toml")).is_file() {
        Ok(text.to_owned())
    } else {
        Err("the name of a `sims/*.toml` scenario, without `.toml`")
    }
}

fn mutant_name(text: &str) -> Result<Mutant, &'static str> {
    Mutant::from_name(text).ok_or("a mutant's name, as `leasesim mutants` lists them")
}

fn replicas(text: &str) -> Result<u32, &'static str> {
    match text.parse() {
        Ok(n) if (1..=leasesim::history::limits::REPLICAS_MAX).contains(&n) => Ok(n),
        _ => Err("a number of replicas, 1..=1000"),
    }
}

/// The repository's `sims/` directory.
fn sims() -> PathBuf {
    PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/sims"))
}

/// The names of the `sims/*.toml` scenarios `only` keeps (every one when `None`), sorted.
fn scenario_names(only: Option<&[String]>) -> Vec<String> {
    let entries = std::fs::read_dir(sims()).unwrap_or_else(|e| {
        eprintln!("sidebyside bench: {}: {e}", sims().display());
        std::process::exit(1);
    });
    let mut names: Vec<String> = entries
        .filter_map(|entry| {
            let path = entry.ok()?.path();
            let stem = path.file_stem()?.to_str()?.to_owned();
            (path.extension()? == "toml").then_some(stem)
        })
        .filter(|name| only.is_none_or(|only| only.contains(name)))
        .collect();
    names.sort();
    names
}

/// A run's verdict as the tables print it: `clean`, the checks violated, or the error.
fn outcome_text<T, E: std::fmt::Display>(outcome: Result<(History, T), E>) -> String {
    match outcome {
        Ok((history, _)) => match judge(&history, Budget::default()).violated().as_slice() {
            [] => "clean".to_owned(),
            checks => checks
                .iter()
                .map(|c| format!("{c:?}"))
                .collect::<Vec<_>>()
                .join(","),
        },
        Err(e) => format!("error: {e}"),
    }
}

/// What `sims/<name>.toml` with `seed` gave on `engine`, with `mutant` planted (or none):
/// `clean`, the checks violated, or why it did not run; and the run's wall time (zero when it
/// did not run).
fn verdict(
    name: &str,
    seed: u64,
    mutant: Option<Mutant>,
    engine: WorldEngine,
) -> (String, Duration) {
    let scenario = match Scenario::load(&sims().join(format!("{name}.toml"))) {
        Ok(scenario) => scenario,
        Err(e) => return (format!("unloaded: {e}"), Duration::ZERO),
    };
    let run = match scenario.resolve(seed) {
        Ok(run) => run,
        Err(e) => return (format!("unresolved: {e}"), Duration::ZERO),
    };
    let mut config = match run.world_config() {
        Ok(config) => config,
        Err(e) => return (format!("refused: {e}"), Duration::ZERO),
    };
    config.engine = engine;
    if mutant.is_some() {
        config.mutant = mutant;
    }
    let started = Instant::now();
    let outcome =
        runner::run_with_timeout(&config, run.schedule.clone(), run.world_workload(), TIMEOUT);
    let took = started.elapsed();
    (outcome_text(outcome), took)
}

/// The scenarios table: every scenario × every seed, both verdicts and wall times.
fn scenarios_table(settings: &Settings) {
    let (from, to) = settings.seeds;
    println!("scenario\tseed\tturmoil\tengine\tturmoil ms\tengine ms");
    for name in &scenario_names(settings.only.as_deref()) {
        for seed in from..to {
            let [(turmoil, t), (engine, e)] = ENGINES.map(|en| verdict(name, seed, None, en));
            let mark = if turmoil == engine { "" } else { "*" };
            println!(
                "{mark}{name}\t{seed}\t{turmoil}\t{engine}\t{}\t{}",
                t.as_millis(),
                e.as_millis()
            );
        }
    }
}

/// The mutants table: every mutant whose kill is a scenario (those of `only`, when given), both
/// verdicts on its kill.
fn mutants_table(only: Option<&[Mutant]>) {
    println!("mutant\tscenario\tseed\tcheck\tturmoil\tengine");
    let chosen = Mutant::ALL
        .iter()
        .filter(|mutant| only.is_none_or(|only| only.contains(mutant)));
    for &mutant in chosen {
        let Kill::Scenario {
            scenario,
            check,
            seed,
        } = mutants::kill(mutant)
        else {
            continue;
        };
        let name = scenario
            .trim_start_matches("sims/")
            .trim_end_matches(".toml");
        let [turmoil, engine] = ENGINES.map(|en| verdict(name, seed, Some(mutant), en).0);
        let killed = |verdict: &str| verdict.split(',').any(|c| c == format!("{check:?}"));
        let mark = if killed(&turmoil) == killed(&engine) {
            ""
        } else {
            "*"
        };
        println!(
            "{mark}{}\t{name}\t{seed}\t{check:?}\t{turmoil}\t{engine}",
            mutant.name()
        );
    }
}

/// The wall table: a fault-free generated run of 60 simulated s, seed 1, per size and engine.
fn wall_table(settings: &Settings) {
    for &replicas in &settings.replicas {
        for engine in ENGINES {
            let built = World::builder()
                .seed(1)
                .replicas(replicas)
                .duration(Duration::from_secs(60))
                .engine(engine)
                .build();
            let started = Instant::now();
            let ran = built
                .map_err(|e| e.to_string())
                .and_then(|world| world.run().map_err(|e| e.to_string()));
            let took = started.elapsed();
            match ran {
                Ok(output) => println!(
                    "{replicas} replicas on {}: {} ms, {} operations",
                    engine.name(),
                    took.as_millis(),
                    output.history.ops().count()
                ),
                Err(e) => {
                    eprintln!(
                        "sidebyside bench: {replicas} replicas on {}: {e}",
                        engine.name()
                    );
                    std::process::exit(1);
                }
            }
        }
    }
}

fn main() {
    let settings = Settings::from_env();
    if settings.prints("scenarios") {
        scenarios_table(&settings);
    }
    if settings.prints("mutants") {
        mutants_table(settings.mutants.as_deref());
    }
    if settings.prints("wall") {
        wall_table(&settings);
    }
}
