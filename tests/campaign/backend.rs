//! `--backend` on `campaign` and `run`: every scenario's world on the backend named, checked
//! there when loaded, recorded in the run files and the campaign's identity, and named in
//! every command that reruns a run (docs/campaigns.md#another-backend).

use std::path::Path;
use std::process::Output;

use leasesim_testkit::{assert_exit, both, leasesim};
use tempfile::TempDir;

use super::support::{copy_sims, results};

/// `leasesim campaign` over `root/sims` with `--seeds seeds --backend backend`, into `root/out`.
fn campaign_on(root: &Path, seeds: &str, backend: &str) -> Output {
    let args = [
        "campaign",
        "--sims",
        "sims",
        "--seeds",
        seeds,
        "--backend",
        backend,
    ];
    leasesim!().run_in(
        root,
        [&args[..], &["--out", "out", "--no-progress"]].concat(),
    )
}

/// [`campaign_on`] in a fresh folder (returned) whose `sims/` holds `scenario` alone.
fn campaign_of(scenario: &str, seeds: &str, backend: &str) -> (TempDir, Output) {
    let root = tempfile::tempdir().unwrap();
    copy_sims(root.path(), "sims", &[scenario]);
    let output = campaign_on(root.path(), seeds, backend);
    (root, output)
}

#[test]
fn a_campaign_with_backend_runs_every_scenario_on_it_and_every_rerun_command_says_so() {
    let (root, output) = campaign_of("swarm-partitions", "0..2", "kube");
    assert_eq!(output.status.code(), Some(0), "{}", both(&output));
    let out = root.path().join("out");
    let meta: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("campaign.json")).unwrap()).unwrap();
    assert_eq!(meta["meta"]["backend"], "kube", "{meta}");
    assert_eq!(meta["meta"]["binary"], "leasesim", "{meta}");
    let mut runs = results(&out);
    runs.sort_by_key(|run| run["seed"].as_u64());
    assert_eq!(runs.len(), 2);
    for (seed, run) in runs.iter().enumerate() {
        assert_eq!(
            run["replay"],
            format!(
                "leasesim run --scenario sims/swarm-partitions.toml --seed {seed} --backend kube"
            ),
        );
    }
    // The run a rerun command makes is the campaign's: on kube, whose API server writes
    // `write` lines (the gRPC authority writes `decision` lines instead).
    let rerun = leasesim!().run_in(
        root.path(),
        [
            "run",
            "--scenario",
            "sims/swarm-partitions.toml",
            "--seed",
            "1",
            "--backend",
            "kube",
            "--out",
            "rerun",
        ],
    );
    assert_eq!(rerun.status.code(), Some(0), "{}", both(&rerun));
    let run_file = std::fs::read_to_string(root.path().join("rerun/run.json")).unwrap();
    assert!(run_file.contains("\"backend\": \"kube\""), "{run_file}");
    let history = std::fs::read_to_string(root.path().join("rerun/history.jsonl")).unwrap();
    assert!(
        history.contains("\"kind\":\"write\""),
        "no API server write in the rerun"
    );
    let report = std::fs::read_to_string(out.join("report.md")).unwrap();
    assert!(
        report.contains("| backend | `kube` (every scenario's) |"),
        "{report}"
    );
    assert!(
        report.contains(
            "`leasesim run --scenario sims/<scenario>.toml --seed <seed> --backend kube`"
        ),
        "{report}"
    );
}

#[test]
fn a_campaign_with_backend_refuses_a_scenario_whose_schedule_it_cannot_run_naming_the_flag() {
    // Its schedule deletes a lease record: the kube backend has no record deletion.
    let (_root, output) = campaign_of("f5a-token-survives-record-deletion", "0..1", "kube");
    let names = [
        "f5a-token-survives-record-deletion.toml",
        "with --backend kube:",
    ];
    assert_exit(&output, 2, &names);
}

#[test]
fn leasesim_refuses_a_target_backend_naming_the_targets_binary() {
    let target = "target:kube-lease-manager";
    let (root, campaign) = campaign_of("swarm-partitions", "0..1", target);
    for output in [
        leasesim!().run_in(root.path(), ["run", "--seed", "1", "--backend", target]),
        campaign,
    ] {
        assert_exit(&output, 2, &["leasesim-targets"]);
    }
}

#[test]
fn an_unknown_backend_name_is_refused_listing_the_names() {
    let root = tempfile::tempdir().unwrap();
    let output = leasesim!().run_in(root.path(), ["run", "--seed", "1", "--backend", "etcd"]);
    assert_exit(
        &output,
        2,
        &["expected `grpc`, `kube`, `flock` or `target:<name>`"],
    );
}
