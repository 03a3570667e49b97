//! Workload plans: a generated workload is "draw the plan, run the plan" — its plan, as a
//! run file holds it, runs the same world byte for byte, and round-trips through JSON.

use std::time::Duration;

use leasesim::campaign::scenario::Scenario;
use leasesim::sim::plan::{Plan, PlannedRun};
use leasesim::sim::runfile::{self, RunFile, RunWorkload};
use leasesim_testkit::failures_on_two_threads;

use crate::support::sims;

const TIMEOUT: Duration = Duration::from_secs(120);

fn resolve(name: &str, seed: u64) -> RunFile {
    let scenario = Scenario::load(&sims().join(format!("{name}.toml"))).unwrap();
    scenario.resolve(seed).unwrap()
}

fn plan_of(run: &RunFile) -> &Plan {
    match &run.workload {
        RunWorkload::Plan(plan) => plan,
        other => panic!("expected a plan, got {other:?}"),
    }
}

/// Whether `run`'s plan gives the history `run` gave while it was being planned, byte for
/// byte (a world's bytes do not depend on the process it runs in: `determinism.rs`).
fn plan_runs_the_same_world(run: &RunFile) -> Result<(), String> {
    let (planned, generated) = run.planned(TIMEOUT).unwrap();
    assert!(!plan_of(&planned).runs.is_empty(), "no runs were planned");
    let (replayed, _) = runfile::execute(&planned, TIMEOUT).unwrap();
    let (generated, replayed) = (generated.to_jsonl(), replayed.to_jsonl());
    if generated == replayed {
        return Ok(());
    }
    let line = generated
        .lines()
        .zip(replayed.lines())
        .position(|(a, b)| a != b);
    Err(format!(
        "the plan's history differs from the generated run's (first at line {line:?})"
    ))
}

/// Over scenarios with graceful shutdowns, replica crashes and restarts, freezes, record
/// deletion and the Kubernetes backend, and a planted bug, `seeds` of each: the history of a
/// generated run and the history of its plan are the same bytes. The runs go two at a time (a
/// world's bytes do not depend on what runs beside it), so the sweep uses both cores of a
/// 2-core machine instead of being the test binary's one long serial pole.
fn generated_workloads_and_their_plans_run_the_same_world(seeds: std::ops::Range<u64>) {
    let cases: [(&str, Option<&str>); 6] = [
        ("graceful-shutdowns", None),
        ("graceful-shutdowns", Some("cleanup-before-invalidate")),
        ("swarm-crashes", None),
        ("swarm-freezes", None),
        ("kube-swarm-everything", None),
        ("kube-swarm-crashes", None),
    ];
    let runs: Vec<(&str, Option<&str>, u64)> = cases
        .iter()
        .flat_map(|&(name, mutant)| seeds.clone().map(move |seed| (name, mutant, seed)))
        .collect();
    let failures = failures_on_two_threads(&runs, |&(name, mutant, seed)| {
        let mut run = resolve(name, seed);
        run.mutant = mutant.map(str::to_owned);
        plan_runs_the_same_world(&run)
            .err()
            .map(|error| format!("{name} seed {seed} ({mutant:?}): {error}"))
    });
    assert!(failures.is_empty(), "{failures:#?}");
}

/// Seed 0 of every case: each kind of plan (shutdowns, crashes, freezes, the Kubernetes
/// backend, a planted bug) runs the world of its generated run.
#[test]
fn a_generated_workload_and_its_plan_run_the_same_world_on_seed_0_of_each_case() {
    generated_workloads_and_their_plans_run_the_same_world(0..1);
}

#[test]
#[ignore = "slow: 60 worlds (5 seeds of 6 cases, each generated and planned); runs in .ci/run's slow step: cargo test --release -- --ignored"]
fn a_generated_workload_and_its_plan_run_the_same_world() {
    generated_workloads_and_their_plans_run_the_same_world(0..5);
}

/// The plans of those runs have what a generated workload draws: several replicas, later
/// incarnations (a restart after a crash or a graceful shutdown), and graceful shutdowns.
#[test]
fn a_plan_holds_every_replica_incarnation_and_shutdown_the_run_drew() {
    let (planned, history) = resolve("graceful-shutdowns", 0).planned(TIMEOUT).unwrap();
    let plan = plan_of(&planned);
    let replicas: std::collections::BTreeSet<&str> =
        plan.runs.iter().map(|run| run.replica.as_str()).collect();
    assert_eq!(replicas.len() as u32, planned.world.replicas);
    assert!(plan.runs.iter().any(|run| run.shutdown));
    assert!(plan.runs.iter().any(|run| run.incarnation > 0));
    // Every incarnation that made an operation has runs in the plan.
    for op in history.ops() {
        let (replica, incarnation) = (&op.process.replica, op.process.incarnation);
        assert!(
            plan.runs
                .iter()
                .any(|run| &run.replica == replica && run.incarnation == incarnation),
            "{replica}#{incarnation} made operations but has no runs"
        );
    }
}

/// A planned run file round-trips through its JSON, and reads back as version 3.
#[test]
fn a_planned_run_file_round_trips_through_json() {
    let (planned, _) = resolve("swarm-crashes", 2).planned(TIMEOUT).unwrap();
    let text = planned.to_json();
    assert!(
        text.contains("\"plan\": {"),
        "{}",
        &text[..text.len().min(400)]
    );
    let back = RunFile::parse(&text).unwrap();
    assert_eq!(back, planned);
    assert_eq!(back.v, 3);
    let run: PlannedRun = serde_json::from_str(
        r#"{"replica": "replica-2", "incarnation": 1, "at_ms": 1500, "session": "s1",
            "appends": 2, "think_ms": 300, "shutdown": true}"#,
    )
    .unwrap();
    assert_eq!(
        (
            run.incarnation,
            run.at_ms,
            run.appends,
            run.think_ms,
            run.shutdown
        ),
        (1, 1500, 2, 300, true)
    );
}

/// A plan naming a replica or session the world lacks is refused at load, naming the field.
#[test]
fn a_plan_the_world_cannot_run_is_refused_at_load() {
    let (mut planned, _) = resolve("swarm-crashes", 2).planned(TIMEOUT).unwrap();
    let RunWorkload::Plan(plan) = &mut planned.workload else {
        unreachable!()
    };
    plan.runs[0].session = "s9".into();
    let error = RunFile::parse(&planned.to_json()).unwrap_err().to_string();
    assert!(error.contains("`workload.plan`"), "{error}");
    assert!(error.contains("unknown session `s9`"), "{error}");
}
