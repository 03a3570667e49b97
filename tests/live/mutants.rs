//! Planted bugs caught in live mode by the check that catches them in simulation
//! (`leasesim mutants` names it), on live versions of their scenarios (`sims/live/m-*.toml`).

use super::support;

fn caught(mutant: &str, check: &str) {
    let _serial = support::serial();
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join(mutant);
    let (code, stdout, stderr) = support::live(&[
        "--scenario",
        &support::live_scenario(&format!("m-{mutant}")),
        "--seed",
        "1",
        "--mutant",
        mutant,
        "--out",
        out.to_str().unwrap(),
    ]);
    assert_eq!(code, 1, "{stdout}\n{stderr}");
    let result = support::result(&out);
    assert_eq!(support::check_verdict(&result, check), "fail", "{stdout}");
}

#[test]
fn append_ignores_expected_tip_is_caught_by_fence_in_live_mode() {
    caught("append-ignores-expected-tip", "FENCE");
}

#[test]
fn no_local_deadline_is_caught_by_stop_in_live_mode() {
    caught("no-local-deadline", "STOP");
}

#[test]
fn no_grace_period_is_caught_by_excl_in_live_mode() {
    caught("no-grace-period", "EXCL");
}
