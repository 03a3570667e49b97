//! Scenario files in `sims/`: every one loads; each field case F1–F7 of
//! `docs/field-cases.md` run from its scenario file ends in the right outcome the case
//! names, for more than one seed; a swarm run replays byte for byte from its run file.

use std::time::Duration;

use leasesim::campaign::scenario::{Scenario, ScenarioFaults};
use leasesim::history::{Decision, HistLossCause, History, OpResult, Outcome};
use leasesim::sim::config::WorldEngine;
use leasesim::sim::runfile::{self, RunFile};
use leasesim_testkit::leasesim;

use crate::support::{
    A1_THEN_B1, A1_THEN_B1_B2_B3, B1_AFTER_A_FENCED_NOTHING, appended,
    assert_f3_stopped_by_the_fence, grants, ledger, ops, outcomes, repo, run, run_on,
    scenario_refused, sims,
};

const A: &str = "replica-1";
const B: &str = "replica-2";
const C: &str = "replica-3";

const SEEDS: [u64; 2] = [1, 2];

#[test]
fn every_scenario_file_in_sims_loads() {
    let mut names = Vec::new();
    for entry in std::fs::read_dir(sims()).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "toml") {
            let scenario = Scenario::load(&path).unwrap_or_else(|e| panic!("{e}"));
            scenario.resolve(1).unwrap_or_else(|e| panic!("{e}"));
            names.push(scenario.name());
        }
    }
    names.sort();
    for expected in [
        "f1-pause-longer-than-ttl",
        "f2-renewals-black-holed",
        "f3-slow-clock-cut-off-from-lease",
        "f4-fence-compares-the-tip",
        "f5a-token-survives-record-deletion",
        "f5b-token-survives-authority-restart",
        "f5c-restart-while-held",
        "f6-late-release",
        "f7-renew-resurrects",
        "graceful-shutdowns",
        "stale-open-after-suspend",
        "validity-from-own-clock",
        "swarm-clocks",
        "swarm-crashes",
        "swarm-deletion",
        "swarm-delays",
        "swarm-everything",
        "swarm-freezes",
        "swarm-partitions",
        "wall-jump-at-the-authority",
    ] {
        assert!(names.iter().any(|n| n == expected), "{expected} missing");
    }
}

#[test]
fn f1_the_stale_append_after_a_long_pause_is_fenced() {
    for seed in SEEDS {
        let history = run("f1-pause-longer-than-ttl", seed);
        assert_eq!(ledger(&history, "s1"), A1_THEN_B1);
        let a = outcomes(&history, A, "journal_append");
        assert_eq!(a[0], appended(2));
        let fenced = OpResult::Fenced {
            expected: 2,
            actual: 4,
        };
        assert_eq!(a[1], (Outcome::Fail, fenced), "seed {seed}");
        assert_eq!(grants(&history), [(A.into(), 1), (B.into(), 2)]);
    }
}

#[test]
fn f2_a_black_holed_holder_stops_at_its_own_deadline_not_the_hung_call() {
    for seed in SEEDS {
        let history = run("f2-renewals-black-holed", seed);
        let lost = OpResult::LeaseLost {
            cause: HistLossCause::Deadline {
                valid_until_local_us: 13_500_000,
            },
        };
        assert_eq!(
            outcomes(&history, A, "journal_append"),
            [
                appended(2),
                (Outcome::Fail, lost.clone()),
                (Outcome::Fail, lost)
            ],
            "seed {seed}: a2 (14 s) and a3 (17 s) are refused unsent"
        );
        // A renew was still hanging when A gave the lease up at 13.5 s on its clock.
        let hung = history.ops().any(|op| {
            op.process.replica == A
                && op.op.name() == "lease_renew"
                && op.invoke_us < 13_500_000
                && op.complete_us.is_none_or(|c| c > 14_000_000)
        });
        assert!(
            hung,
            "seed {seed}: no renew was in flight past A's deadline"
        );
        assert_eq!(ledger(&history, "s1"), A1_THEN_B1);
        assert_eq!(grants(&history), [(A.into(), 1), (B.into(), 2)]);
    }
}

#[test]
fn f3_a_slow_clock_cut_off_from_the_lease_service_is_stopped_by_the_fence() {
    for seed in SEEDS {
        let history = run("f3-slow-clock-cut-off-from-lease", seed);
        assert_eq!(ledger(&history, "s1"), A1_THEN_B1_B2_B3);
        assert_f3_stopped_by_the_fence(&history, &format!("seed {seed}"));
    }
}

/// F4 on both engines: a6, sent while A was still valid, reaches the ledger after B read the
/// tip a5 and before B's fence CAS; the CAS conflicts, B re-reads and fences after a6, and a6,
/// acknowledged to A, survives. The staged latencies keep every round trip inside TCP's 1.2 s
/// give-up, so the race forms over the engine's TCP as over turmoil's
/// (docs/world.md#the-world-on-the-engine).
#[test]
fn f4_the_fence_lands_after_the_last_acknowledged_append() {
    for engine in [WorldEngine::Turmoil, WorldEngine::Engine] {
        for seed in SEEDS {
            let history = run_on(engine, "f4-fence-compares-the-tip", seed);
            assert_f4_fence_retried_after_a6(&history, &format!("{engine:?} seed {seed}"));
        }
    }
}

/// F4's right outcome in `history` (`what` names the run in a failure).
fn assert_f4_fence_retried_after_a6(history: &History, what: &str) {
    assert_eq!(
        ledger(history, "s1"),
        [
            "fence 1 replica-1",
            "a1 replica-1",
            "a2 replica-1",
            "a3 replica-1",
            "a4 replica-1",
            "a5 replica-1",
            "a6 replica-1",
            "fence 2 replica-2",
            "b1 replica-2"
        ],
        "{what}"
    );
    // a6 was acknowledged to A at seq 7 and survives.
    assert_eq!(
        outcomes(history, A, "journal_append")[5],
        appended(7),
        "{what}"
    );
    // B's fence CAS expected a5 (seq 6), conflicted with a6, and landed after it.
    let fences: Vec<(Outcome, OpResult)> = history
        .ops()
        .filter(|op| op.process.replica == B && op.session == "s1")
        .filter(|op| op.op.name() == "ledger_append")
        .map(|op| (op.outcome, op.result.clone().unwrap()))
        .collect();
    assert_eq!(
        fences[..2],
        [
            (Outcome::Fail, OpResult::Conflict { actual: 7 }),
            appended(8)
        ],
        "{what}"
    );
}

/// F5: after the record is deleted (a) or the authority restarts (b), B gets token 2, never
/// 1 again, and A's late token-1 append is fenced.
fn f5(name: &str) {
    for seed in SEEDS {
        let history = run(name, seed);
        assert_eq!(
            grants(&history),
            [(A.into(), 1), (B.into(), 2)],
            "seed {seed}"
        );
        assert_eq!(ledger(&history, "s1"), A1_THEN_B1);
        let a = outcomes(&history, A, "journal_append");
        let fenced = OpResult::Fenced {
            expected: 2,
            actual: 4,
        };
        assert_eq!(a, [appended(2), (Outcome::Fail, fenced)], "seed {seed}");
    }
}

#[test]
fn f5a_the_token_survives_record_deletion() {
    f5("f5a-token-survives-record-deletion");
}

#[test]
fn f5b_the_token_survives_an_authority_restart() {
    f5("f5b-token-survives-authority-restart");
}

/// F5 variant c: the authority restarts while A's lease is live; B is refused with
/// `Unavailable` during the grace period (never `Held`, never granted), then gets token 2, and
/// A's appends made while its lease was live survive before B's fence.
#[test]
fn f5c_a_restart_while_held_grants_nothing_until_the_old_lease_could_have_expired() {
    for seed in SEEDS {
        let history = run("f5c-restart-while-held", seed);
        let b = outcomes(&history, B, "lease_acquire");
        assert!(
            matches!(
                b[..],
                [
                    (Outcome::Info, OpResult::Unavailable { .. }),
                    (Outcome::Ok, OpResult::Granted { token: 2, .. })
                ]
            ),
            "seed {seed}: {b:?}"
        );
        assert_eq!(
            grants(&history),
            [(A.into(), 1), (B.into(), 2)],
            "seed {seed}"
        );
        assert_eq!(
            ledger(&history, "s1"),
            [
                "fence 1 replica-1",
                "a1 replica-1",
                "a2 replica-1",
                "fence 2 replica-2",
                "b1 replica-2"
            ],
            "seed {seed}"
        );
    }
}

/// The lease host's wall clock steps an hour forward while A holds s1: expiry is judged on
/// the monotonic clock, so B gets `Held` by token 1, A's renewals (every TTL/3 until its last
/// append at 15 s) keep token 1, and all of A's appends land.
#[test]
fn a_forward_wall_jump_at_the_authority_ends_no_lease() {
    for seed in SEEDS {
        let history = run("wall-jump-at-the-authority", seed);
        assert_eq!(
            outcomes(&history, B, "lease_acquire"),
            [(
                Outcome::Fail,
                OpResult::Held {
                    holder_token: Some(1)
                }
            )],
            "seed {seed}"
        );
        assert_eq!(grants(&history), [(A.into(), 1)], "seed {seed}");
        let renewed = outcomes(&history, A, "lease_renew");
        assert!(
            renewed.len() >= 4
                && renewed
                    .iter()
                    .all(|r| matches!(r, (Outcome::Ok, OpResult::Granted { token: 1, .. }))),
            "seed {seed}: {renewed:?}"
        );
        assert_eq!(
            ledger(&history, "s1"),
            [
                "fence 1 replica-1",
                "a1 replica-1",
                "a2 replica-1",
                "a3 replica-1"
            ],
            "seed {seed}"
        );
    }
}

#[test]
fn f6_a_late_release_frees_nothing() {
    for seed in SEEDS {
        let history = run("f6-late-release", seed);
        let releases: Vec<(String, u64, bool)> = history
            .decisions()
            .filter_map(|d| match d.decision {
                Decision::Release { token, ended } => Some((d.owner.replica.clone(), token, ended)),
                _ => None,
            })
            .collect();
        assert_eq!(releases, [(A.into(), 1, false)], "seed {seed}");
        assert_eq!(
            outcomes(&history, C, "lease_acquire"),
            [(
                Outcome::Fail,
                OpResult::Held {
                    holder_token: Some(2)
                }
            )]
        );
        let renewed = outcomes(&history, B, "lease_renew");
        assert!(
            matches!(
                renewed[..],
                [(Outcome::Ok, OpResult::Granted { token: 2, .. })]
            ),
            "seed {seed}: {renewed:?}"
        );
        assert_eq!(grants(&history), [(A.into(), 1), (B.into(), 2)]);
    }
}

#[test]
fn f7_a_stale_renew_resurrects_nothing() {
    for seed in SEEDS {
        let history = run("f7-renew-resurrects", seed);
        let raw_renews: Vec<(Outcome, OpResult)> = ops(&history, A, "lease_renew")
            .into_iter()
            .filter(|op| op.invoke_us >= 12_000_000)
            .map(|op| (op.outcome, op.result.clone().unwrap()))
            .collect();
        let held = (Outcome::Fail, OpResult::Held { holder_token: None });
        assert_eq!(
            raw_renews.last(),
            Some(&held),
            "seed {seed}: {raw_renews:?}"
        );
        assert!(
            raw_renews
                .iter()
                .all(|r| !matches!(r.1, OpResult::Granted { .. }))
        );
        assert_eq!(
            grants(&history),
            [(A.into(), 1), (B.into(), 2), (A.into(), 3)],
            "seed {seed}: A must acquire anew, with token 3"
        );
    }
}

/// A swarm run's files replay byte for byte from its `run.json`, and the run file carries
/// the options the seed drew.
#[test]
fn a_swarm_run_replays_byte_for_byte_from_its_run_file() {
    let scenario = Scenario::load(&sims().join("swarm-everything.toml")).unwrap();
    assert!(matches!(scenario.faults, ScenarioFaults::Swarm(_)));
    let out = tempfile::tempdir().unwrap();
    let (first, second) = (out.path().join("first"), out.path().join("second"));
    let run = scenario.resolve(7).unwrap();
    let drawn = run
        .drawn
        .clone()
        .expect("a swarm run records its drawn options");
    assert!(!drawn.kinds.is_empty());
    assert_eq!(
        run.schedule,
        drawn.schedule(&run.world.config(7, Default::default()))
    );
    let timeout = Duration::from_secs(120);
    runfile::execute_to(&run, &first, timeout).unwrap();
    let saved = RunFile::load(&first.join("run.json")).unwrap();
    assert_eq!(saved, run);
    let (result, _) = runfile::execute_to(&saved, &second, timeout).unwrap();
    assert_eq!(
        result.replay,
        format!("leasesim replay {}", second.join("run.json").display())
    );
    for file in ["history.jsonl", "trace.jsonl", "run.json", "schedule.json"] {
        let [a, b] = [&first, &second].map(|dir| std::fs::read(dir.join(file)).unwrap());
        assert!(a == b, "{file} differs on replay");
    }
    assert!(std::fs::read(first.join("history.jsonl")).unwrap().len() > 10_000);
}

/// Another seed draws other options; the same seed draws the same.
#[test]
fn swarm_options_depend_on_the_seed_only() {
    let scenario = Scenario::load(&sims().join("swarm-everything.toml")).unwrap();
    let drawn: Vec<_> = (1..=20)
        .map(|seed| scenario.resolve(seed).unwrap().drawn.unwrap())
        .collect();
    let again = scenario.resolve(5).unwrap().drawn.unwrap();
    assert_eq!(drawn[4], again);
    let distinct: std::collections::BTreeSet<String> = drawn.iter().map(|d| d.summary()).collect();
    assert_eq!(distinct.len(), 20);
}

/// `leasesim run --scenario` prints the seed first, the drawn options, and the replay command;
/// `leasesim replay` reproduces the history byte for byte.
#[test]
fn the_cli_runs_a_scenario_and_replays_its_run_file() {
    let out = tempfile::tempdir().unwrap();
    let first = out.path().join("first");
    let first_dir = first.to_str().unwrap();
    let output = leasesim!().run_in(
        repo(),
        [
            "run",
            "--scenario",
            "sims/swarm-freezes.toml",
            "--seed",
            "3",
            "--out",
            first_dir,
        ],
    );
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    assert_eq!(
        output.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(lines[0], "SEED=3");
    assert!(
        lines[1].starts_with("scenario: swarm-freezes (sims/swarm-freezes.toml)"),
        "{stdout}"
    );
    assert!(
        lines.iter().any(|l| l.starts_with("drawn: kinds=")),
        "{stdout}"
    );
    let run_json = first.join("run.json");
    let replay = format!("replay: leasesim replay {}", run_json.display());
    assert!(lines.contains(&replay.as_str()), "{stdout}");
    let second = out.path().join("second");
    let output = leasesim!().run_in(
        repo(),
        [
            "replay",
            run_json.to_str().unwrap(),
            "--out",
            second.to_str().unwrap(),
        ],
    );
    assert_eq!(output.status.code(), Some(0));
    for file in ["history.jsonl", "trace.jsonl"] {
        let [a, b] = [&first, &second].map(|dir| std::fs::read(dir.join(file)).unwrap());
        assert!(a == b, "{file} differs on replay");
    }
}

/// A malformed scenario is bad input (exit 2) with the loader's message.
#[test]
fn the_cli_refuses_a_malformed_scenario_with_exit_2() {
    scenario_refused(
        "v = 1\nabout = \"x\"\n[world]\nttl = 5\n",
        &["bad.toml:4:1: `world.ttl`: unknown field `ttl`"],
    );
}

#[test]
fn a_holder_resumed_from_suspend_cannot_fence_below_the_newer_fence() {
    for seed in SEEDS {
        let history = run("stale-open-after-suspend", seed);
        assert_eq!(grants(&history), [(A.into(), 1), (B.into(), 2)]);
        let stale = OpResult::StaleEpoch {
            epoch: 1,
            highest_fence: 2,
        };
        assert_eq!(
            outcomes(&history, A, "journal_open"),
            [(Outcome::Fail, stale)],
            "seed {seed}: A's open after its suspend is refused"
        );
        assert!(
            outcomes(&history, A, "ledger_append").is_empty(),
            "seed {seed}"
        );
        assert_eq!(ledger(&history, "s1"), B1_AFTER_A_FENCED_NOTHING);
    }
}

#[test]
fn a_slow_holder_stops_at_its_own_deadline_not_the_authoritys_expiry() {
    for seed in SEEDS {
        let history = run("validity-from-own-clock", seed);
        assert_eq!(grants(&history), [(A.into(), 1), (B.into(), 2)]);
        // Acquired at t=5 s, 3 s on A's clock (40% slow): valid until 3 + 10 - 1 = 12 s there.
        let lost = OpResult::LeaseLost {
            cause: HistLossCause::Deadline {
                valid_until_local_us: 12_000_000,
            },
        };
        assert_eq!(
            outcomes(&history, A, "journal_append"),
            [appended(2), (Outcome::Fail, lost)],
            "seed {seed}: a2 (t=21 s, 12.6 s on A's clock) is refused unsent"
        );
        assert_eq!(ledger(&history, "s1"), A1_THEN_B1);
    }
}

#[test]
fn graceful_shutdowns_hand_over_and_break_nothing() {
    for seed in SEEDS {
        let history = run("graceful-shutdowns", seed);
        let violated = leasesim::check::judge::judge(
            &history,
            leasesim::check::linearizability::Budget::default(),
        )
        .violated();
        assert!(violated.is_empty(), "seed {seed}: {violated:?}");
        // Each replica shut down at least once (a later incarnation ran).
        for replica in [A, B, C] {
            assert!(
                history
                    .ops()
                    .any(|op| op.process.replica == replica && op.process.incarnation > 0),
                "seed {seed}: {replica} never restarted after a shutdown"
            );
        }
    }
}
