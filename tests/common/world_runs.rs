//! Simulated runs the test binaries `world`, `check` and `invariants` all make, written once:
//! the field cases of docs/field-cases.md replayed exactly, and generated runs with random
//! faults. Each binary includes this file with `#[path]`: it builds on the `leasesim` library,
//! which `leasesim-testkit` (a dependency of leasesim's tests) must not depend on
//! (docs/testing.md#helpers-written-once).

// Each binary that includes this file uses a part of it.
#![allow(dead_code)]

use std::time::Duration;

use leasesim::mutant::Mutant;
use leasesim::sim::config::{Workload, WorldEngine};
use leasesim::sim::schedule::FaultSchedule;
use leasesim::sim::script::Script;
use leasesim::sim::world::{RunOutput, World};

/// The schedule and script of field case `name`, as shipped in `sims/field-cases/` (the files
/// docs/campaigns.md#commands runs).
pub fn field_case(name: &str) -> (FaultSchedule, Script) {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/sims/field-cases");
    let read = |kind: &str| std::fs::read_to_string(format!("{dir}/{name}.{kind}.json")).unwrap();
    let schedule = FaultSchedule::from_json(&read("schedule")).unwrap();
    (schedule, Script::from_json(&read("script")).unwrap())
}

/// `script` under `schedule` on the field cases' world (two replicas for 30 s) with `seed`,
/// run to its end on `engine`.
pub fn run_scripted(
    engine: WorldEngine,
    seed: u64,
    schedule: FaultSchedule,
    script: Script,
) -> RunOutput {
    World::builder()
        .seed(seed)
        .replicas(2)
        .duration(Duration::from_secs(30))
        .schedule(schedule)
        .workload(Workload::Scripted(script))
        .engine(engine)
        .build()
        .unwrap()
        .run()
        .unwrap()
}

/// Field case `name` run with `seed` on the field cases' world, on turmoil.
pub fn run_field_case(name: &str, seed: u64) -> RunOutput {
    run_field_case_on(WorldEngine::Turmoil, name, seed)
}

/// Field case `name` run with `seed` on the field cases' world, on `engine`.
pub fn run_field_case_on(engine: WorldEngine, name: &str, seed: u64) -> RunOutput {
    let (schedule, script) = field_case(name);
    run_scripted(engine, seed, schedule, script)
}

/// A generated run with random faults: `seed`, `seconds` of simulated time, the world's other
/// defaults, and `mutant` planted (or none), run to its end.
pub fn run_random(seed: u64, seconds: u64, mutant: Option<Mutant>) -> RunOutput {
    World::builder()
        .seed(seed)
        .duration(Duration::from_secs(seconds))
        .mutant(mutant)
        .random_faults()
        .build()
        .unwrap()
        .run()
        .unwrap()
}

/// A run with `seed`, `seconds` of simulated time and the faults of `schedule` (the world's
/// other defaults: its generated workload), run to its end.
pub fn run_scheduled(seed: u64, seconds: u64, schedule: FaultSchedule) -> RunOutput {
    World::builder()
        .seed(seed)
        .duration(Duration::from_secs(seconds))
        .schedule(schedule)
        .build()
        .unwrap()
        .run()
        .unwrap()
}
