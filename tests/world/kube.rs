//! The Kubernetes Lease backend in the world: field cases K1, K2 and K3 of
//! `docs/field-cases.md` run from their scenario files end in the right outcomes, and a
//! kube world records what its checkers need (write lines, `kube_*` and `lease_*` operations,
//! no authority).

use std::time::Duration;

use leasesim::campaign::scenario::Scenario;
use leasesim::history::{History, Op, OpResult, Outcome, WriteVerb};
use leasesim::sim::runfile::{self};
use leasesim_testkit::leasesim;

use crate::support::{ledger, run, sims, write};

/// Every `kube_update` from 12 s on, as `(replica, expected_rv, outcome, result)`.
fn updates_after(history: &History, from_us: u64) -> Vec<(String, Option<u64>, Outcome, OpResult)> {
    history
        .ops()
        .filter(|op| op.invoke_us >= from_us)
        .filter_map(|op| match &op.op {
            Op::KubeUpdate { expected_rv, .. } => Some((
                op.process.replica.clone(),
                *expected_rv,
                op.outcome,
                op.result.clone().unwrap(),
            )),
            _ => None,
        })
        .collect()
}

/// `lease_acquire` results from `from_us` on, by replica.
fn acquires_after(history: &History, from_us: u64) -> Vec<(String, OpResult)> {
    history
        .ops()
        .filter(|op| op.invoke_us >= from_us && matches!(op.op, Op::LeaseAcquire { .. }))
        .map(|op| (op.process.replica.clone(), op.result.clone().unwrap()))
        .collect()
}

/// The accepted writes as `(verb, holder_identity, transitions, resource_version)`.
fn writes(history: &History) -> Vec<(WriteVerb, String, u64, u64)> {
    history
        .writes()
        .map(|w| {
            (
                w.verb,
                w.holder_identity.clone(),
                w.transitions,
                w.resource_version,
            )
        })
        .collect()
}

#[test]
fn k1_two_candidates_from_one_read_exactly_one_update_wins() {
    for seed in [1, 2, 3] {
        let history = run("k1-two-candidates-one-read", seed);
        let updates = updates_after(&history, 12_000_000);
        // Both Updates carry the resourceVersion of the same read (A's create, rv 1).
        assert_eq!(updates.len(), 2, "seed {seed}: {updates:?}");
        assert!(
            updates.iter().all(|u| u.1 == Some(1)),
            "seed {seed}: {updates:?}"
        );
        let won: Vec<_> = updates.iter().filter(|u| u.2 == Outcome::Ok).collect();
        let lost: Vec<_> = updates.iter().filter(|u| u.2 == Outcome::Fail).collect();
        assert_eq!((won.len(), lost.len()), (1, 1), "seed {seed}: {updates:?}");
        assert_eq!(lost[0].3, OpResult::KubeConflict {});
        let winner = won[0].0.clone();
        // The loser re-read, saw the winner live, and reported Held.
        let mut acquires = acquires_after(&history, 12_000_000);
        acquires.sort_by_key(|(replica, _)| replica != &winner);
        assert!(
            matches!(acquires[0].1, OpResult::Granted { token: 2, .. }),
            "seed {seed}: {acquires:?}"
        );
        assert_eq!(
            acquires[1].1,
            OpResult::Held {
                holder_token: Some(2)
            }
        );
        assert_eq!(
            writes(&history),
            [
                (WriteVerb::Create, "replica-1#0".into(), 1, 1),
                (WriteVerb::Update, format!("{winner}#0"), 2, 2),
            ],
            "seed {seed}"
        );
        let tail = ["fence 2", if winner == "replica-2" { "b1" } else { "c1" }];
        let expected: Vec<String> = ["fence 1 replica-1", "a1 replica-1"]
            .map(String::from)
            .into_iter()
            .chain(tail.map(|t| format!("{t} {winner}")))
            .collect();
        assert_eq!(ledger(&history, "s1"), expected, "seed {seed}");
    }
}

/// `(expected_rv, outcome, result)` of each `kube_update` `replica` sent from 12 s on.
fn updates_of(history: &History, replica: &str) -> Vec<(Option<u64>, Outcome, OpResult)> {
    updates_after(history, 12_000_000)
        .into_iter()
        .filter(|update| update.0 == replica)
        .map(|(_, rv, outcome, result)| (rv, outcome, result))
        .collect()
}

/// The result of `replica`'s first `lease_acquire` from 12 s on.
fn acquired(history: &History, replica: &str) -> OpResult {
    let mut acquires = acquires_after(history, 12_000_000).into_iter();
    let (_, result) = acquires.find(|(r, _)| r == replica).unwrap();
    result
}

#[test]
fn k3_a_takeover_decided_from_a_read_a_409_made_stale_is_decided_again() {
    for seed in [1, 2, 3] {
        let history = run("k3-decision-from-a-stale-read", seed);
        let writes = writes(&history);
        // A's create; C's takeover at 13 s and its renew at about 16.3 s, both before B's
        // stalled update reaches the API server.
        assert_eq!(
            writes[..3],
            [
                (WriteVerb::Create, "replica-1#0".into(), 1, 1),
                (WriteVerb::Update, "replica-3#0".into(), 2, 2),
                (WriteVerb::Update, "replica-3#0".into(), 2, 3),
            ],
            "seed {seed}"
        );
        assert!(
            writes.iter().skip(1).all(|w| w.1 == "replica-3#0"),
            "seed {seed}: only C writes after A: {writes:?}"
        );
        // B's one update, decided at 12 s from rv 1, conflicts; B reads again and is Held.
        assert_eq!(
            updates_of(&history, "replica-2"),
            [(Some(1), Outcome::Fail, OpResult::KubeConflict {})],
            "seed {seed}"
        );
        let held = OpResult::Held {
            holder_token: Some(2),
        };
        assert_eq!(acquired(&history, "replica-2"), held, "seed {seed}");
        assert!(
            matches!(
                acquired(&history, "replica-3"),
                OpResult::Granted { token: 2, .. }
            ),
            "seed {seed}"
        );
        assert_eq!(
            ledger(&history, "s1"),
            [
                "fence 1 replica-1",
                "a1 replica-1",
                "fence 2 replica-3",
                "c1 replica-3",
                "c2 replica-3"
            ],
            "seed {seed}"
        );
    }
}

#[test]
fn k2_release_keeps_the_object_so_the_next_token_is_four() {
    for seed in [1, 2] {
        let history = run("k2-delete-resets-token", seed);
        let writes = writes(&history);
        // Three takeovers by A, a renew, releases with an empty holder and transitions kept.
        assert_eq!(
            writes,
            [
                (WriteVerb::Create, "replica-1#0".into(), 1, 1),
                (WriteVerb::Update, String::new(), 1, 2),
                (WriteVerb::Update, "replica-1#0".into(), 2, 3),
                (WriteVerb::Update, String::new(), 2, 4),
                (WriteVerb::Update, "replica-1#0".into(), 3, 5),
                // A's renew keeps the token.
                (WriteVerb::Update, "replica-1#0".into(), 3, 6),
                (WriteVerb::Update, String::new(), 3, 7),
                (WriteVerb::Update, "replica-2#0".into(), 4, 8),
            ],
            "seed {seed}"
        );
        assert!(history.writes().all(|w| w.verb != WriteVerb::Delete));
        assert_eq!(
            ledger(&history, "s1"),
            [
                "fence 3 replica-1",
                "a1 replica-1",
                "fence 4 replica-2",
                "b1 replica-2"
            ],
            "seed {seed}"
        );
    }
}

#[test]
fn a_kube_world_has_no_authority_and_records_lease_and_kube_calls() {
    let history = run("k2-delete-resets-token", 1);
    let config = history.config().unwrap();
    assert_eq!(config.authority, None);
    assert_eq!(history.decisions().count(), 0);
    let names: std::collections::BTreeSet<&str> = history.ops().map(|op| op.op.name()).collect();
    for name in [
        "lease_acquire",
        "lease_release",
        "kube_get",
        "kube_create",
        "kube_update",
    ] {
        assert!(names.contains(name), "no {name} op: {names:?}");
    }
}

#[test]
fn check_model_lease_judges_a_kube_history_by_its_lease_api_calls() {
    use leasesim::check::command::{CheckModel, FileVerdict, check_file};
    use leasesim::check::linearizability::Budget;
    let history = run("k1-two-candidates-one-read", 1);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("history.jsonl");
    std::fs::write(&path, history.to_jsonl()).unwrap();
    let report = check_file(Some(CheckModel::Lease), &path, Budget::default());
    assert_eq!(report.verdict, FileVerdict::Linearizable, "{report:?}");
    let kube_calls = history
        .ops()
        .filter(|op| op.op.name().starts_with("kube_"))
        .count();
    assert!(kube_calls > 0);
    assert_eq!(
        report.ops, kube_calls,
        "every Lease API call, and only those"
    );
}

#[test]
fn every_swarm_profile_has_a_kube_twin_without_record_deletion() {
    use leasesim::campaign::scenario::ScenarioFaults;
    use leasesim::sim::generate::FaultKind;
    use leasesim::sim::runfile::BackendSpec;
    let mut twins = 0;
    for entry in std::fs::read_dir(sims()).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        if !(name.starts_with("swarm-") && name.ends_with(".toml")) {
            continue;
        }
        let grpc = Scenario::load(&path).unwrap();
        let kube = Scenario::load(&sims().join(format!("kube-{name}")))
            .unwrap_or_else(|e| panic!("{name} has no kube twin: {e}"));
        assert_eq!(kube.world.backend, BackendSpec::Kube, "{name}");
        let mut world = kube.world.clone();
        world.backend = BackendSpec::Grpc;
        assert_eq!(
            world, grpc.world,
            "kube-{name}: the same world but the backend"
        );
        let (ScenarioFaults::Swarm(grpc), ScenarioFaults::Swarm(kube)) =
            (&grpc.faults, &kube.faults)
        else {
            panic!("{name}: both are swarm profiles");
        };
        let mut expected: Vec<FaultKind> = grpc
            .kinds
            .iter()
            .copied()
            .filter(|k| *k != FaultKind::DeleteLeaseRecord)
            .collect();
        if name == "swarm-everything.toml" && !expected.contains(&FaultKind::AuthorityErrors) {
            expected.push(FaultKind::AuthorityErrors);
        }
        assert_eq!(
            kube.kinds, expected,
            "kube-{name}: the same kinds but record deletion (and API server errors)"
        );
        twins += 1;
    }
    assert_eq!(twins, 10);
}

#[test]
fn kube_worlds_draw_drift_inside_half_the_skew_margin() {
    let scenario = Scenario::load(&sims().join("kube-swarm-everything.toml")).unwrap();
    let mut drifts = 0;
    for seed in 0..40 {
        let run = scenario.resolve(seed).unwrap();
        for fault in &run.schedule.faults {
            if let leasesim::sim::schedule::Fault::ClockDrift { ppm, .. } = fault.fault {
                assert!(ppm.abs() <= 50_000, "seed {seed}: drift {ppm} ppm");
                drifts += 1;
            }
            assert!(
                !matches!(
                    fault.fault,
                    leasesim::sim::schedule::Fault::DeleteLeaseRecord { .. }
                ),
                "seed {seed}"
            );
        }
    }
    assert!(drifts > 0, "40 seeds drew no drift at all");
}

/// A kube run replayed in two fresh processes writes the same history and trace bytes.
#[test]
fn kube_runs_give_identical_bytes_in_separate_processes() {
    let out = tempfile::tempdir().unwrap();
    let runs = [
        ("kube-swarm-everything", 1),
        ("kube-swarm-everything", 2),
        ("kube-swarm-everything", 3),
        ("kube-swarm-clocks", 4),
        ("k1-two-candidates-one-read", 1),
    ];
    for (name, seed) in runs {
        let dir = out.path().join(format!("{name}-{seed}"));
        let scenario = sims().join(format!("{name}.toml"));
        let output = leasesim!()
            .command()
            .args([
                "run",
                "--seed",
                &seed.to_string(),
                "--check-determinism",
                "--scenario",
            ])
            .arg(&scenario)
            .arg("--out")
            .arg(&dir)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_ne!(
            output.status.code(),
            Some(3),
            "{name} seed {seed}: {stderr}"
        );
        for file in ["history.jsonl", "trace.jsonl"] {
            let first = std::fs::read(dir.join("first").join(file)).unwrap();
            let second = std::fs::read(dir.join("second").join(file)).unwrap();
            assert!(
                first.len() > 1_000,
                "{name} seed {seed} wrote almost no {file}"
            );
            assert!(first == second, "{name} seed {seed}: {file} differs");
        }
    }
}

/// The checks violated by `scenario` (a path from the repository) on `seed` with `mutant`.
fn violated(
    scenario: &str,
    seed: u64,
    mutant: Option<leasesim::mutant::Mutant>,
) -> (History, Vec<leasesim::check::Check>) {
    use leasesim::check::judge::judge;
    use leasesim::check::linearizability::Budget;
    let path = sims().parent().unwrap().join(scenario);
    let mut run = Scenario::load(&path).unwrap().resolve(seed).unwrap();
    run.mutant = mutant.map(|m| m.name().to_owned());
    let (history, _) = runfile::execute(&run, Duration::from_secs(120)).unwrap();
    let violated = judge(&history, Budget::default()).violated();
    (history, violated)
}

/// `mutant` dies where the catalogue says (its scenario, pinned seed and check), and the
/// correct implementation is clean on the same run.
fn killed_where_the_catalogue_says(mutant: leasesim::mutant::Mutant) -> History {
    let leasesim::mutants::Kill::Scenario {
        scenario,
        check,
        seed,
    } = leasesim::mutants::kill(mutant)
    else {
        panic!("{mutant} is not killed by a scenario");
    };
    let (history, with) = violated(scenario, seed, Some(mutant));
    assert!(
        with.contains(&check),
        "{mutant} survived {scenario} seed {seed}: violated {with:?}, not {check}"
    );
    let (_, without) = violated(scenario, seed, None);
    assert!(
        without.is_empty(),
        "the correct implementation violates {without:?} on {scenario}"
    );
    history
}

#[test]
fn mutant_update_without_resource_version_lets_both_k1_candidates_win() {
    use leasesim::mutant::Mutant;
    let history = killed_where_the_catalogue_says(Mutant::UpdateWithoutResourceVersion);
    let granted: Vec<String> = acquires_after(&history, 12_000_000)
        .into_iter()
        .filter(|(_, result)| matches!(result, OpResult::Granted { .. }))
        .map(|(replica, _)| replica)
        .collect();
    assert_eq!(granted, ["replica-2", "replica-3"], "both \"win\"");
}

#[test]
fn mutant_delete_on_release_gives_b_token_one_again_on_k2() {
    use leasesim::mutant::Mutant;
    let history = killed_where_the_catalogue_says(Mutant::DeleteOnRelease);
    assert!(history.writes().any(|w| w.verb == WriteVerb::Delete));
    // Every release deleted the object, so every create started again at leaseTransitions 1:
    // A fenced with 1, and B, granted token 1 again, is refused at open (StaleEpoch).
    let opens: Vec<(String, OpResult)> = history
        .ops()
        .filter(|op| matches!(op.op, Op::JournalOpen { .. }))
        .map(|op| (op.process.replica.clone(), op.result.clone().unwrap()))
        .collect();
    assert_eq!(
        opens[1],
        (
            "replica-2".into(),
            OpResult::StaleEpoch {
                epoch: 1,
                highest_fence: 1
            }
        )
    );
    assert_eq!(
        ledger(&history, "s1"),
        ["fence 1 replica-1", "a1 replica-1"]
    );
}

/// K3 under `conflict-retry-keeps-decision`: after the 409 B reads only for the version and
/// sends its 12 s decision again at C's latest resourceVersion: granted token 2 beside C.
#[test]
fn mutant_conflict_retry_keeps_decision_gives_k3_two_holders_of_token_2() {
    use leasesim::mutant::Mutant;
    let history = killed_where_the_catalogue_says(Mutant::ConflictRetryKeepsDecision);
    let c_renewed_at = writes(&history)[2].3;
    let b: Vec<(Option<u64>, Outcome)> = updates_of(&history, "replica-2")
        .into_iter()
        .map(|(rv, outcome, _)| (rv, outcome))
        .collect();
    assert_eq!(
        b[..2],
        [(Some(1), Outcome::Fail), (Some(c_renewed_at), Outcome::Ok)]
    );
    for replica in ["replica-2", "replica-3"] {
        assert!(
            matches!(
                acquired(&history, replica),
                OpResult::Granted { token: 2, .. }
            ),
            "{replica}"
        );
    }
}

#[test]
fn mutant_transitions_bumped_on_renew_moves_the_token_without_a_takeover() {
    killed_where_the_catalogue_says(leasesim::mutant::Mutant::TransitionsBumpedOnRenew);
}

#[test]
fn mutant_expiry_from_renew_time_is_caught_by_wall_offsets() {
    killed_where_the_catalogue_says(leasesim::mutant::Mutant::ExpiryFromRenewTime);
}

#[test]
fn a_ttl_of_fractional_seconds_is_refused_for_kube_at_build_and_in_scenarios() {
    use leasesim::sim::backend::{Backend, Kube};
    use leasesim::sim::world::World;
    let error = World::builder()
        .backend(Backend::new(Kube))
        .ttl(Duration::from_millis(2_500))
        .build()
        .unwrap_err()
        .to_string();
    assert!(
        error.contains("whole seconds") && error.contains("2500 ms"),
        "{error}"
    );
    let dir = tempfile::tempdir().unwrap();
    let text = "v = 1\nabout = \"x\"\n\n[world]\nbackend = \"kube\"\nttl_ms = 2500\n";
    let path = write(dir.path(), "kube-fraction.toml", text);
    let error = Scenario::load(std::path::Path::new(&path)).unwrap_err();
    assert_eq!(error.field.as_deref(), Some("world.ttl_ms"), "{error}");
    assert!(error.message.contains("whole seconds"), "{error}");
}

#[test]
fn authority_errors_answer_the_api_servers_status_for_a_while() {
    use leasesim::check::judge::judge;
    use leasesim::check::linearizability::Budget;
    use leasesim::sim::backend::{Backend, Kube};
    use leasesim::sim::schedule::{ErrorStatus, Fault, FaultSchedule};
    use leasesim::sim::world::World;
    let errors = |status| {
        FaultSchedule::new().at(
            5_000,
            Fault::AuthorityErrors {
                duration_ms: 4_000,
                status,
                to: None,
            },
        )
    };
    // Files from before `authority_errors` spell it `apiserver_errors` with an HTTP code.
    let old = FaultSchedule::from_json(
        r#"{"v":1,"faults":[{"at_ms":5000,"fault":"apiserver_errors","duration_ms":4000,"code":503}]}"#,
    );
    assert_eq!(old, Ok(errors(ErrorStatus::Unavailable)));
    let bad = FaultSchedule::from_json(
        r#"{"v":1,"faults":[{"at_ms":1,"fault":"authority_errors","duration_ms":4,"status":404}]}"#,
    )
    .unwrap_err();
    assert!(
        bad.contains(
            "internal, unavailable, permission_denied, conflict, invalid, too_many_requests or \
             timeout"
        ),
        "{bad}"
    );
    let world = World::builder()
        .seed(3)
        .backend(Backend::new(Kube))
        .duration(Duration::from_secs(30))
        .schedule(errors(ErrorStatus::Unavailable))
        .build()
        .unwrap();
    let history = world.run().unwrap().history;
    let refused: Vec<_> = history
        .ops()
        .filter(|op| matches!(op.result, Some(OpResult::KubeStatus { code: 503, .. })))
        .collect();
    assert!(!refused.is_empty(), "no call met the 503 window");
    for op in &refused {
        assert_eq!(op.outcome, Outcome::Info);
        assert!((4_900_000..=9_000_000).contains(&op.invoke_us), "{op:?}");
    }
    // Nothing was applied inside the window, and the run is clean.
    assert!(
        history
            .writes()
            .all(|w| !(5_010_000..9_000_000).contains(&w.at_us)),
        "a write was accepted inside the error window"
    );
    assert_eq!(judge(&history, Budget::default()).violated(), []);
}

#[test]
fn a_mutant_planted_in_another_backends_code_is_refused_not_run_clean() {
    let k1 = Scenario::load(&sims().join("k1-two-candidates-one-read.toml")).unwrap();
    let mut run = k1.resolve(1).unwrap();
    run.mutant = Some("token-not-advanced-on-expiry".into());
    let refused = run.validate().unwrap_err().to_string();
    assert!(
        refused.contains("token-not-advanced-on-expiry")
            && refused.contains("grpc")
            && refused.contains("kube"),
        "{refused}"
    );
    // A bug in the journal runs on every backend; a kube bug on its own backend.
    for mutant in ["append-ignores-expected-tip", "delete-on-release"] {
        run.mutant = Some(mutant.into());
        assert!(run.validate().is_ok(), "{mutant}");
    }
    let f1 = Scenario::load(&sims().join("f1-pause-longer-than-ttl.toml")).unwrap();
    let mut run = f1.resolve(1).unwrap();
    run.mutant = Some("delete-on-release".into());
    assert!(
        run.validate().is_err(),
        "a kube mutant on the gRPC authority"
    );
}
