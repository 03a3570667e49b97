//! Shrinking reaches the calls: a counterexample with a generated workload is shrunk to its
//! plan with a handful of calls that still breaks the same check, and the shrunk run file
//! replays byte for byte.

use std::time::Duration;

use leasesim::campaign::scenario::Scenario;
use leasesim::campaign::shrink::{MAX_ATTEMPTS, shrink};
use leasesim::check::Check;
use leasesim::check::judge::judge;
use leasesim::check::linearizability::Budget;
use leasesim::sim::runfile::{self, RunWorkload};

use crate::support::{leasesim, repo_sims};

const TIMEOUT: Duration = Duration::from_secs(120);

/// graceful-shutdowns seed 0 with cleanup-before-invalidate (the service releases its leases
/// before telling its runs to stop, so a run's clean-up append follows the release: STOP)
/// makes over a hundred operations in 20 s; its shrunk run is a plan of at most 20 that still breaks
/// STOP, and `leasesim replay` of the saved file gives the shrinker's history byte for byte.
#[test]
fn a_generated_counterexample_shrinks_to_a_few_calls_and_replays_byte_for_byte() {
    let scenario = Scenario::load(&repo_sims().join("graceful-shutdowns.toml")).unwrap();
    let mut run = scenario.resolve(0).unwrap();
    run.mutant = Some("cleanup-before-invalidate".into());
    // 20 s instead of 60 (the violation comes early): every attempt is a whole world.
    run.world.duration_s = 20;
    let (original, _) = runfile::execute(&run, TIMEOUT).unwrap();
    let budget = || Budget::steps(5_000_000);
    assert!(judge(&original, budget()).violated().contains(&Check::Stop));
    let before = original.ops().count();
    assert!(
        before > 100,
        "the generated run made only {before} operations"
    );

    let shrunk = shrink(&run, Check::Stop, TIMEOUT);
    assert!(shrunk.attempts <= MAX_ATTEMPTS);
    let RunWorkload::Plan(plan) = &shrunk.run.workload else {
        panic!(
            "the shrunk workload is not a plan: {:?}",
            shrunk.run.workload
        )
    };
    assert!(
        shrunk.operations <= 20,
        "{} operations left of {before} ({} runs)",
        shrunk.operations,
        plan.runs.len()
    );
    assert!(plan.runs.iter().any(|run| run.shutdown), "{plan:?}");
    assert!(!shrunk.violations.is_empty());

    let (history, _) = runfile::execute(&shrunk.run, TIMEOUT).unwrap();
    assert_eq!(history.ops().count(), shrunk.operations);
    assert!(judge(&history, budget()).violated().contains(&Check::Stop));

    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("shrunk.run.json");
    shrunk.run.save(&file).unwrap();
    let out = dir.path().join("replay");
    let replay = leasesim(
        dir.path(),
        &[
            "replay",
            file.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
        ],
    );
    assert_eq!(replay.status.code(), Some(1), "{replay:?}");
    let replayed = std::fs::read_to_string(out.join("history.jsonl")).unwrap();
    assert!(
        replayed == history.to_jsonl(),
        "the replay's history differs"
    );
}
