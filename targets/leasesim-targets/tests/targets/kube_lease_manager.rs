//! The kube-lease-manager target (docs/targets.md#kube-lease-manager): a kube swarm run of the
//! crate, unmodified, is a real contest (leadership changes, API writes, its signal recorded)
//! and replays byte for byte; each finding of targets/kube-lease-manager/FINDINGS.md replays
//! with its violation. What each expects is its row of the table ([`super::table`]).

use crate::support::{
    a_swarm_run_is_a_contest, its_swarm_run_passes_check_determinism, repo, targets, text,
    the_finding_replays_with_its_violation,
};
use crate::table::{Target, target};

fn kube_lease_manager() -> &'static Target {
    target("kube-lease-manager")
}

/// Finding 2 (FINDINGS.md), on every takeover; every other check holds.
#[test]
fn a_kube_swarm_run_of_the_crate_changes_leaders_and_shows_only_its_two_write_takeover() {
    a_swarm_run_is_a_contest(kube_lease_manager());
}

#[test]
fn the_target_passes_check_determinism_on_that_kube_swarm_run() {
    its_swarm_run_passes_check_determinism(kube_lease_manager());
}

#[test]
fn finding_1_two_managers_say_i_lead_after_a_forced_release_cleared_a_fresh_lock() {
    the_finding_replays_with_its_violation(
        kube_lease_manager(),
        "1-two-leaders-after-a-forced-release.run.json",
    );
}

#[test]
fn finding_2_a_takeover_writes_the_holder_before_it_raises_lease_transitions() {
    the_finding_replays_with_its_violation(
        kube_lease_manager(),
        "2-takeover-in-two-writes.run.json",
    );
}

#[test]
fn finding_3_a_candidate_whose_wall_clock_is_ahead_takes_over_a_live_lock() {
    the_finding_replays_with_its_violation(
        kube_lease_manager(),
        "3-a-candidate-with-its-wall-clock-ahead-takes-a-live-lock.run.json",
    );
}

#[test]
fn finding_4_the_signal_outlives_the_lease_while_the_api_is_unreachable() {
    the_finding_replays_with_its_violation(
        kube_lease_manager(),
        "4-the-signal-outlives-the-lease-while-the-api-is-unreachable.run.json",
    );
}

#[test]
fn leasesim_itself_cannot_run_a_finding_it_names_the_targets_binary() {
    // This test process links leasesim without registering any target, as `leasesim` does
    // (the binary's exit 2 is tests/world/hosted.rs's
    // leasesim_refuses_a_target_backend_naming_the_targets_binary).
    let path = repo().join("targets/kube-lease-manager/findings/2-takeover-in-two-writes.run.json");
    let error = match leasesim::sim::runfile::RunFile::load(&path) {
        Err(error) => error.to_string(),
        Ok(run) => {
            let dir = tempfile::tempdir().unwrap();
            let timeout = std::time::Duration::from_secs(60);
            match leasesim::campaign::single::run_into(&run, dir.path(), timeout) {
                Err(error) => error.to_string(),
                Ok(_) => panic!("leasesim ran a target world"),
            }
        }
    };
    assert!(
        error.contains("target:kube-lease-manager") && error.contains("leasesim-targets"),
        "{error}"
    );
}

/// A campaign's run is `replay`'s: the history a campaign keeps of the minimal run it shrank
/// to is byte for byte the one `replay` of that run file writes, in the targets binary.
#[test]
fn a_campaigns_history_of_a_target_run_is_the_one_replay_writes() {
    let work = tempfile::tempdir().unwrap();
    let sims = work.path().join("sims");
    std::fs::create_dir_all(&sims).unwrap();
    std::fs::copy(
        repo().join("sims/kube-swarm-partitions.toml"),
        sims.join("kube-swarm-partitions.toml"),
    )
    .unwrap();
    let out = work.path().join("campaign");
    let sims_arg = sims.display().to_string();
    // Seed 1 breaks TOKEN only (finding 2): one shrink, of a few dozen runs.
    let campaign = targets(
        &[
            "campaign",
            "--sims",
            &sims_arg,
            "--seeds",
            "1..2",
            "--backend",
            "target:kube-lease-manager",
            "--no-progress",
        ],
        &out,
    );
    assert_eq!(campaign.status.code(), Some(1), "{}", text(&campaign));
    let shrunk = out.join("shrunk");
    let run_file = std::fs::read_dir(&shrunk)
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .find(|path| path.to_string_lossy().ends_with(".run.json"))
        .expect("the campaign shrank its TOKEN failure into a run file");
    let kept = std::fs::read(
        run_file
            .to_string_lossy()
            .replace(".run.json", ".history.jsonl"),
    )
    .unwrap();
    let replayed = work.path().join("replayed");
    let replay = targets(&["replay", &run_file.display().to_string()], &replayed);
    assert_eq!(replay.status.code(), Some(1), "{}", text(&replay));
    // Every command that reruns a run names the binary that knows the target.
    let shrunk_lines = std::fs::read_to_string(out.join("shrunk.jsonl")).unwrap();
    assert!(
        shrunk_lines.contains(&format!(
            "\"replay\":\"leasesim-targets replay {}\"",
            run_file.display()
        )),
        "{shrunk_lines}"
    );
    let results = std::fs::read_to_string(out.join("results.jsonl")).unwrap();
    assert!(
        results.contains(&format!(
            "\"replay\":\"leasesim-targets run --scenario {sims_arg}/kube-swarm-partitions.toml --seed 1 --backend target:kube-lease-manager\""
        )),
        "{results}"
    );
    let history = std::fs::read(replayed.join("history.jsonl")).unwrap();
    assert!(
        kept == history,
        "the campaign's history differs from replay's"
    );
}
