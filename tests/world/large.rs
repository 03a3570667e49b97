//! Worlds of any size (docs/world.md#worlds-of-any-size): up to 1,000 replicas, and a world
//! that does not name its sessions gets `max(2, replicas / 10)` of them, recorded in its run
//! file, so a large world is judged rather than `unknown`.

use std::time::Duration;

use leasesim::campaign::request::RunRequest;
use leasesim::check::judge::{LinearizabilityOutcome, judge};
use leasesim::check::linearizability::{Budget, Verdict};
use leasesim::exit::Exit;
use leasesim::sim::config::default_sessions;
use leasesim::sim::runfile::{self, RunFile, WorldSpec};
use leasesim::sim::world::World;
use leasesim_testkit::{assert_exit, leasesim};

/// `s1` … `sN`.
fn sessions(n: u32) -> Vec<String> {
    (1..=n).map(|i| format!("s{i}")).collect()
}

#[test]
fn unnamed_sessions_are_two_up_to_29_replicas_then_one_per_ten_replicas() {
    for replicas in [1, 3, 29] {
        assert_eq!(default_sessions(replicas), ["s1", "s2"], "{replicas}");
    }
    assert_eq!(default_sessions(30), sessions(3));
    assert_eq!(default_sessions(100), sessions(10));
    assert_eq!(default_sessions(1_000), sessions(100));
}

#[test]
fn the_builder_draws_sessions_for_its_replicas_unless_they_are_named() {
    let drawn = World::builder().replicas(200).build().unwrap();
    assert_eq!(drawn.config().sessions, sessions(20));
    let named = World::builder()
        .sessions(["a"])
        .replicas(200)
        .build()
        .unwrap();
    assert_eq!(named.config().sessions, ["a"]);
    let named_after = World::builder()
        .replicas(200)
        .sessions(["a", "b"])
        .build()
        .unwrap();
    assert_eq!(named_after.config().sessions, ["a", "b"]);
}

#[test]
fn a_thousand_replicas_build_and_one_more_is_refused() {
    let world = World::builder().replicas(1_000).build().unwrap();
    assert_eq!(world.config().hosts().len(), 1_002);
    assert_eq!(world.config().hosts()[1_001], "replica-1000");
    let error = World::builder().replicas(1_001).build().unwrap_err();
    assert_eq!(
        error.to_string(),
        "bad world: replicas must be 1..=1000, got 1001"
    );
}

#[test]
fn a_run_file_keeps_the_sessions_it_ran_with_whatever_the_rule() {
    let request = RunRequest {
        replicas: 120,
        ..RunRequest::new(3)
    };
    let run = request.resolve().unwrap();
    assert_eq!(run.world.sessions, sessions(12));
    let mut json: serde_json::Value = serde_json::from_str(&run.to_json()).unwrap();
    assert_eq!(json["world"]["sessions"], serde_json::json!(sessions(12)));
    // A run file naming other sessions replays with them, not with the rule's.
    json["world"]["sessions"] = serde_json::json!(["s1"]);
    let edited = json.to_string();
    assert_eq!(RunFile::parse(&edited).unwrap().world.sessions, ["s1"]);
}

/// `leasesim run --seed 1 --replicas 100 --duration 2s`: 100 replicas on 10 sessions, faults
/// drawn from the seed, the correct implementation. Short: turmoil's cost is cubic in the hosts
/// (docs/world.md#cost).
#[test]
fn a_generated_run_of_a_hundred_replicas_is_judged_and_clean() {
    let run = RunRequest {
        replicas: 100,
        duration: Duration::from_secs(2),
        ..RunRequest::new(1)
    }
    .resolve()
    .unwrap();
    let (history, _trace) = runfile::execute(&run, Duration::from_secs(600)).unwrap();
    let config = history.config().unwrap();
    assert_eq!((config.replicas, config.sessions.len()), (100, 10));
    let replicas_that_called: std::collections::BTreeSet<_> =
        history.ops().map(|op| op.process.replica.clone()).collect();
    assert!(
        replicas_that_called.len() >= 90,
        "only {} replicas called",
        replicas_that_called.len()
    );
    let judgement = judge(&history, Budget::default());
    assert_eq!(judgement.exit_code(), Exit::Clean, "{judgement}");
    for (check, outcome) in &judgement.linearizability {
        assert!(
            matches!(
                outcome,
                LinearizabilityOutcome::Checked(Verdict::Linearizable)
            ),
            "{check:?}: {:?}",
            outcome.status()
        );
    }
}

#[test]
fn a_world_section_without_sessions_gets_the_rules_for_its_replicas() {
    let spec = |text: &str| toml::from_str::<WorldSpec>(text).unwrap();
    assert_eq!(spec("replicas = 250").sessions, sessions(25));
    assert_eq!(spec("").sessions, ["s1", "s2"], "3 replicas by default");
    assert_eq!(
        spec("replicas = 250\nsessions = [\"x\"]").sessions,
        ["x"],
        "sessions named are kept"
    );
    let unknown = toml::from_str::<WorldSpec>("replica = 2").unwrap_err();
    assert!(
        unknown.to_string().contains("unknown field `replica`"),
        "{unknown}"
    );
}

#[test]
fn run_refuses_more_than_a_thousand_replicas_naming_the_range() {
    let output = leasesim!().run(["run", "--seed", "1", "--replicas", "1001"]);
    assert_exit(&output, 2, &["--replicas", "1001", "1..=1000"]);
}
