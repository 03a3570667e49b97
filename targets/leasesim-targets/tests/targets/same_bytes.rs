//! `leasesim-targets run` and `run --check-determinism` on a kube swarm scenario: with every
//! clock and entropy read of the world answered by the hooks, the run is the one leasesim
//! makes, byte for byte.

use std::time::Duration;

use leasesim::sim::runfile::RunFile;

use super::support::targets;

const RUN: [&str; 5] = [
    "run",
    "--seed",
    "3",
    "--scenario",
    "sims/kube-swarm-everything.toml",
];

#[test]
fn a_run_of_the_targets_binary_writes_the_bytes_leasesim_writes() {
    let dir = tempfile::tempdir().unwrap();
    let ran = dir.path().join("targets");
    let output = targets(&RUN, &ran);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    // The same run file replayed here, in a process without the interposer: leasesim's run.
    let run = RunFile::load(&ran.join("run.json")).unwrap();
    let here = dir.path().join("here");
    leasesim::campaign::single::run_into(&run, &here, Duration::from_secs(600)).unwrap();
    for file in ["history.jsonl", "trace.jsonl"] {
        let (theirs, ours) = (
            std::fs::read(ran.join(file)).unwrap(),
            std::fs::read(here.join(file)).unwrap(),
        );
        assert!(theirs.len() > 1_000, "{file} is {} bytes", theirs.len());
        assert!(theirs == ours, "{file} differs");
    }
}

#[test]
fn the_targets_binary_passes_check_determinism_on_a_kube_swarm_run() {
    let dir = tempfile::tempdir().unwrap();
    let mut args = RUN.to_vec();
    args.push("--check-determinism");
    let output = targets(&args, dir.path());
    let (stdout, stderr) = (
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr),
    );
    assert_eq!(output.status.code(), Some(0), "{stdout}\n{stderr}");
    assert!(stdout.contains("identical"), "{stdout}");
}

#[test]
fn the_targets_binary_lists_its_targets_for_an_unknown_one() {
    let dir = tempfile::tempdir().unwrap();
    let scenario = dir.path().join("target.toml");
    std::fs::write(
        &scenario,
        "v = 1\nabout = \"a target world\"\n\n[world]\nbackend = \"target:no-such-crate\"\n",
    )
    .unwrap();
    let scenario = scenario.to_str().unwrap();
    let output = targets(
        &["run", "--seed", "1", "--scenario", scenario],
        &dir.path().join("out"),
    );
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert!(
        stderr
            .contains("unknown target backend `target:no-such-crate`; this binary knows target:kube-lease-manager"),
        "{stderr}"
    );
}
