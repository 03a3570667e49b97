//! Planted bugs caught in live mode by the check that catches them in simulation
//! (`leasesim mutants` names it), on live versions of their scenarios (`sims/live/m-*.toml`),
//! where the correct implementation passes it.

use super::support;

/// `mutant` fails `check` on its live scenario, and the correct implementation passes it on
/// the same scenario and seed (so the failure is the mutant's, not the scenario's).
fn caught(mutant: &str, check: &str) {
    let _serial = support::serial();
    let dir = tempfile::tempdir().unwrap();
    let scenario = support::live_scenario(&format!("m-{mutant}"));
    let run = |out: &std::path::Path, mutant: Option<&str>| {
        let mut args = vec!["--scenario", &scenario, "--seed", "1"];
        if let Some(mutant) = mutant {
            args.extend(["--mutant", mutant]);
        }
        support::live_into(out, &args)
    };

    let out = dir.path().join(mutant);
    let (code, stdout, stderr) = run(&out, Some(mutant));
    assert_eq!(code, 1, "{stdout}\n{stderr}");
    assert_eq!(
        support::check_verdict(&support::result(&out), check),
        "fail",
        "{stdout}"
    );

    let twin = dir.path().join("correct");
    let (code, stdout, stderr) = run(&twin, None);
    assert_eq!(code, 0, "the correct implementation:\n{stdout}\n{stderr}");
    assert_eq!(
        support::check_verdict(&support::result(&twin), check),
        "pass",
        "{stdout}"
    );
}

#[test]
#[ignore = "slow: two 9 s live runs on real processes in real time (the mutant, then the correct twin); runs in .ci/run's slow step: cargo test --release -- --ignored"]
fn append_ignores_expected_tip_is_caught_by_fence_in_live_mode() {
    caught("append-ignores-expected-tip", "FENCE");
}

#[test]
#[ignore = "slow: two 9 s live runs on real processes in real time (the mutant, then the correct twin); runs in .ci/run's slow step: cargo test --release -- --ignored"]
fn no_local_deadline_is_caught_by_stop_in_live_mode() {
    caught("no-local-deadline", "STOP");
}

#[test]
#[ignore = "slow: two 9 s live runs on real processes in real time (the mutant, then the correct twin); runs in .ci/run's slow step: cargo test --release -- --ignored"]
fn no_grace_period_is_caught_by_excl_in_live_mode() {
    caught("no-grace-period", "EXCL");
}

/// `leasesim live --backend flock --mutant unlink-on-release`: the run file's world (the
/// simulated gRPC one) cannot name a flock mutant, so each replica takes it with `--mutant`
/// and plants it in its `FlockLease` (it used to exit 3 once the replicas refused the run
/// file). The run ends in a verdict, its history's config line and result name the mutant, and
/// every replica says it planted it. Its race (a waiter on the unlinked inode beside a fresh
/// file's locker) needs two processes to meet within microseconds, which a few seconds of live
/// run seldom reach: the process test `unlink_race_never_two_holders` kills it
/// (docs/live.md#flock-and-etcd-mutants).
#[test]
fn a_flock_mutant_is_planted_in_the_live_flock_replicas_and_the_run_ends_in_a_verdict() {
    let _serial = support::serial();
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let args = [
        "--seed",
        "1",
        "--backend",
        "flock",
        "--mutant",
        "unlink-on-release",
        "--no-faults",
        "--replicas",
        "2",
        "--duration",
        "4s",
    ];
    let (code, stdout, stderr) = support::live_into(&out, &args);
    assert!(
        code == 0 || code == 1,
        "a verdict, not exit {code}:\n{stdout}\n{stderr}"
    );
    let history = std::fs::read_to_string(out.join("history.jsonl")).unwrap();
    let config = history.lines().next().expect("a config line");
    assert!(
        config.contains(r#""mutant":"unlink-on-release""#),
        "{config}"
    );
    let run = std::fs::read_to_string(out.join("run.json")).unwrap();
    assert!(
        !run.contains("unlink-on-release"),
        "the run file names no mutant"
    );
    for replica in ["replica-1", "replica-2"] {
        let log = std::fs::read_to_string(out.join(format!("logs/{replica}-0.log")))
            .unwrap_or_else(|e| panic!("{replica}'s log: {e}"));
        assert!(
            log.contains("mutant unlink-on-release planted"),
            "{replica}: {log}"
        );
    }
}
