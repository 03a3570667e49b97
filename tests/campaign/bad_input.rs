//! Bad input to `leasesim campaign` exits 2 before any run, saying what is wrong.

use leasesim_testkit::{assert_exit, both, leasesim, stderr};

use crate::support::copy_sims;

fn campaign(root: &std::path::Path, extra: &[&str]) -> std::process::Output {
    let mut args = vec!["campaign", "--no-progress", "--out", "out"];
    args.extend(extra);
    leasesim!().run_in(root, &args)
}

#[test]
fn a_sims_folder_without_scenarios_exits_2() {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::create_dir(tmp.path().join("empty")).unwrap();
    std::fs::write(tmp.path().join("empty/notes.txt"), "not a scenario").unwrap();
    let output = campaign(tmp.path(), &["--sims", "empty", "--seeds", "0..1"]);
    assert_exit(
        &output,
        2,
        &["--sims empty: no scenario files (*.toml) there"],
    );
    assert!(!tmp.path().join("out").exists(), "an out folder was made");
}

#[test]
fn a_missing_sims_folder_exits_2() {
    let tmp = tempfile::tempdir().unwrap();
    let output = campaign(tmp.path(), &["--sims", "nowhere", "--seeds", "0..1"]);
    assert_exit(&output, 2, &["--sims nowhere: cannot read that folder"]);
}

#[test]
fn a_malformed_scenario_among_good_ones_exits_2_naming_its_file() {
    let tmp = tempfile::tempdir().unwrap();
    let sims = copy_sims(tmp.path(), "sims", &["f1-pause-longer-than-ttl"]);
    std::fs::write(
        sims.join("zz-broken.toml"),
        "v = 1\nabout = \"broken\"\n[world]\nreplicas = \"three\"\n",
    )
    .unwrap();
    let output = campaign(tmp.path(), &["--sims", "sims", "--seeds", "0..1"]);
    assert_exit(&output, 2, &["sims/zz-broken.toml:4:", "`world.replicas`"]);
    // Nothing ran: every scenario loads before the first run.
    assert!(!tmp.path().join("out/results.jsonl").exists());
}

#[test]
fn an_empty_seed_range_exits_2() {
    let tmp = tempfile::tempdir().unwrap();
    copy_sims(tmp.path(), "sims", &["f1-pause-longer-than-ttl"]);
    let output = campaign(tmp.path(), &["--sims", "sims", "--seeds", "5..5"]);
    assert_exit(&output, 2, &["`5..5` has no seeds"]);
}

#[test]
fn a_shard_past_the_count_exits_2() {
    let tmp = tempfile::tempdir().unwrap();
    copy_sims(tmp.path(), "sims", &["f1-pause-longer-than-ttl"]);
    for shard in ["3/2", "0/2", "1"] {
        let output = campaign(
            tmp.path(),
            &["--sims", "sims", "--seeds", "0..1", "--shard", shard],
        );
        assert_eq!(output.status.code(), Some(2), "{shard}: {}", both(&output));
        assert!(
            stderr(&output).contains(&format!("`{shard}` is not a shard")),
            "{}",
            stderr(&output)
        );
    }
}

/// Bad-input probe D7 and D18: options that would make a campaign of no runs, of hangs
/// only, or a mutant phase without end are usage errors.
#[test]
fn options_that_cannot_make_a_campaign_exit_2() {
    let tmp = tempfile::tempdir().unwrap();
    copy_sims(tmp.path(), "sims", &["f1-pause-longer-than-ttl"]);
    let cases: [(&[&str], &str); 6] = [
        (
            &["--run-timeout", "0s"],
            "--run-timeout 0s: every run would be a hang; give at least 100ms",
        ),
        (
            &["--run-timeout", "1ns"],
            "--run-timeout 1ns: every run would be a hang",
        ),
        (&["--budget", "0s"], "--budget 0s: no run could start"),
        (
            &["--mutants", "all", "--mutant-seeds", "0"],
            "--mutant-seeds 0: give 1 to 1000 seeds per mutant",
        ),
        (
            &["--mutants", "all", "--mutant-seeds", "18446744073709551615"],
            "give 1 to 1000 seeds per mutant",
        ),
        (
            &["--seeds", "0..1", "--shard", "2/2"],
            "--shard 2/2: this shard owns no run",
        ),
    ];
    for (extra, message) in cases {
        let mut args = vec!["--sims", "sims"];
        if !extra.contains(&"--budget") && !extra.contains(&"--seeds") {
            args.extend(["--seeds", "0..1"]);
        }
        args.extend(extra);
        let output = campaign(tmp.path(), &args);
        assert_eq!(
            output.status.code(),
            Some(2),
            "{extra:?}: {}",
            both(&output)
        );
        assert!(
            stderr(&output).contains(message),
            "{extra:?}: {}",
            stderr(&output)
        );
        assert!(
            !tmp.path().join("out").exists(),
            "{extra:?}: an out folder was made"
        );
    }
}

/// Probe 2, N2: `campaign --mutant` of a backend no scenario runs would plant it nowhere and
/// pass on the correct code; it is refused before any run.
#[test]
fn a_mutant_no_scenario_runs_is_refused_before_any_run() {
    let tmp = tempfile::tempdir().unwrap();
    copy_sims(
        tmp.path(),
        "sims",
        &["f1-pause-longer-than-ttl", "f6-late-release"],
    );
    let output = campaign(
        tmp.path(),
        &[
            "--sims",
            "sims",
            "--seeds",
            "0..2",
            "--mutant",
            "unlink-on-release",
        ],
    );
    assert_exit(
        &output,
        2,
        &[
            "--mutant unlink-on-release: no scenario of sims is on its backend",
            "it would change nothing",
        ],
    );
    assert!(!tmp.path().join("out/results.jsonl").exists());
}

/// Probe 2, N9: a swarm profile whose freezes make runs of ~6,100 simulated seconds, under a
/// `--run-timeout` shorter than such a run takes, would report every run as a hang: refused
/// at load, naming the scenario, the limit and the one to give.
#[test]
fn a_run_timeout_shorter_than_a_profiles_longest_run_is_refused_at_load() {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::create_dir(tmp.path().join("sw")).unwrap();
    std::fs::write(
        tmp.path().join("sw/a.toml"),
        "v = 1\nabout = \"x\"\n[world]\nttl_ms = 60000\nduration_s = 30\n[faults.swarm]\n\
         kinds = [\"pause\"]\nfaults = [1, 2]\n[faults.swarm.intensity]\n\
         freeze_ttl_percent = [10000, 10000]\n",
    )
    .unwrap();
    let output = campaign(
        tmp.path(),
        &["--sims", "sw", "--seeds", "0..3", "--run-timeout", "60s"],
    );
    assert_exit(
        &output,
        2,
        &[
            "sw/a.toml: --run-timeout 1m: the run reaches",
            "or more, or a shorter run",
        ],
    );
    assert!(!tmp.path().join("out/results.jsonl").exists());
    // Without the flag each run gets a limit past what it took on the probe's machine (64 s,
    // freezes of 6,000 simulated seconds).
    let scenario =
        leasesim::campaign::scenario::Scenario::load(&tmp.path().join("sw/a.toml")).unwrap();
    assert!(scenario.longest_run_end_ms() > 6_000_000);
    let frozen: Vec<_> = (0..10)
        .map(|seed| scenario.resolve(seed).unwrap())
        .filter(|run| !run.schedule.faults.is_empty())
        .collect();
    assert!(!frozen.is_empty());
    for run in frozen {
        assert!(run.simulated_end_ms() > 6_000_000, "seed {}", run.seed);
        assert!(
            run.wall_timeout(None) > std::time::Duration::from_secs(4 * 64),
            "seed {}: {:?}",
            run.seed,
            run.wall_timeout(None)
        );
    }
}
