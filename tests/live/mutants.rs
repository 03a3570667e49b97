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
