//! The kube-leader-election target (docs/targets.md#kube-leader-election): a kube swarm run of
//! the crate, unmodified, is a real contest (leadership changes, API writes, its signal
//! recorded) and replays byte for byte; each finding of
//! targets/kube-leader-election/FINDINGS.md replays with its violation.

use leasesim::history::History;

use crate::support::{leadership_changes, replay_finding, signals_to_lead, targets, text, verdict};

const TARGET: &str = "kube-leader-election";

/// A partitions swarm seed on the target: 20 changes of a crate's signal to "I lead", 47 API
/// writes, and every check holds.
const RUN: [&str; 7] = [
    "run",
    "--seed",
    "1",
    "--scenario",
    "sims/kube-swarm-partitions.toml",
    "--backend",
    "target:kube-leader-election",
];

#[test]
fn a_kube_swarm_run_of_the_crate_changes_leaders_and_holds_every_check() {
    let dir = tempfile::tempdir().unwrap();
    let output = targets(&RUN, dir.path());
    assert_eq!(output.status.code(), Some(0), "{}", text(&output));
    assert_eq!(
        verdict(&output),
        "verdict: clean (not judged: EXPIRY, LIN-LEASE) — exit 0",
        "{}",
        text(&output)
    );
    let history = History::read_jsonl_path(dir.path().join("history.jsonl")).unwrap();
    let changes = leadership_changes(&history);
    assert!(changes >= 3, "{changes} leadership changes");
    let writes = history.writes().count();
    assert!(writes >= 20, "{writes} API writes");
    assert!(signals_to_lead(&history) >= 3, "the crate's signal");
}

#[test]
fn the_target_passes_check_determinism_on_that_kube_swarm_run() {
    let dir = tempfile::tempdir().unwrap();
    let mut args = RUN.to_vec();
    args.push("--check-determinism");
    let output = targets(&args, dir.path());
    assert_eq!(output.status.code(), Some(0), "{}", text(&output));
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        stdout.contains("wrote identical history.jsonl and trace.jsonl for seed 1"),
        "{stdout}"
    );
}

#[test]
fn finding_1_two_candidates_that_read_a_vacated_lease_both_take_it_with_one_token() {
    let (output, line) = replay_finding(
        TARGET,
        "1-two-candidates-take-a-vacated-lease-at-once.run.json",
    );
    assert_eq!(output.status.code(), Some(1), "{}", text(&output));
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert_eq!(line, "verdict: FAIL: TOKEN, EXCL, EXPIRY violated — exit 1");
    assert!(
        stdout.contains("a takeover by \"replica-3#0\" kept leaseTransitions 3")
            && stdout.contains("replica-2#1's window (token 3")
            && stdout.contains("and replica-3's window (token 3"),
        "{stdout}"
    );
}

#[test]
fn finding_2_a_candidate_whose_wall_clock_is_ahead_takes_over_a_live_lease() {
    let (output, line) = replay_finding(
        TARGET,
        "2-a-candidate-with-its-wall-clock-ahead-takes-a-live-lease.run.json",
    );
    assert_eq!(output.status.code(), Some(1), "{}", text(&output));
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert_eq!(line, "verdict: FAIL: EXCL, EXPIRY violated — exit 1");
    assert!(
        stdout.contains("EXCL: s1: replica-2's window (token 1")
            && stdout.contains("and replica-3's window (token 2"),
        "{stdout}"
    );
}

#[test]
fn finding_3_a_candidate_whose_wall_clock_is_behind_never_takes_a_vacated_lease() {
    let (output, line) = replay_finding(
        TARGET,
        "3-a-candidate-with-its-wall-clock-behind-never-takes-a-vacated-lease.run.json",
    );
    assert_eq!(output.status.code(), Some(5), "{}", text(&output));
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert_eq!(line, "verdict: FAIL: LIVE violated (liveness) — exit 5");
    assert!(
        stdout.contains("LIVE: s1: no acknowledged journal append between the heal at 23.250 s"),
        "{stdout}"
    );
}
