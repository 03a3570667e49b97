//! The kubert target (docs/targets.md#kubert): a kube swarm run of the crate, unmodified, is a
//! real contest (leadership changes, API writes, its signal recorded) and replays byte for
//! byte; each finding of targets/kubert/FINDINGS.md replays with its violation.

use leasesim::history::{History, Op};

use crate::support::{leadership_changes, replay_finding, signals_to_lead, targets, text, verdict};

/// A partitions swarm seed on the target: 12 leadership changes, 63 accepted writes.
const RUN: [&str; 7] = [
    "run",
    "--seed",
    "1",
    "--scenario",
    "sims/kube-swarm-partitions.toml",
    "--backend",
    "target:kubert",
];

#[test]
fn a_kube_swarm_run_of_the_crate_changes_leaders_and_passes_every_check() {
    let dir = tempfile::tempdir().unwrap();
    let output = targets(&RUN, dir.path());
    assert_eq!(output.status.code(), Some(0), "{}", text(&output));
    assert_eq!(
        verdict(&output),
        "verdict: clean (not judged: EXPIRY) — exit 0",
        "{}",
        text(&output)
    );
    let history = History::read_jsonl_path(dir.path().join("history.jsonl")).unwrap();
    let changes = leadership_changes(&history);
    assert!(changes >= 3, "{changes} leadership changes");
    let writes = history.writes().count();
    assert!(writes >= 20, "{writes} API writes");
    assert!(signals_to_lead(&history) >= 3, "the crate's signal");
    // The adapter created each session's Lease (kubert needs it to exist) with the session
    // annotation, so the API server's write lines name the sessions.
    let created: Vec<_> = history
        .ops()
        .filter(|op| matches!(op.op, Op::KubeCreate { .. }))
        .map(|op| op.session.as_str())
        .collect();
    assert!(
        created.contains(&"s1") && created.contains(&"s2"),
        "{created:?}"
    );
    let sessions: std::collections::BTreeSet<_> =
        history.writes().map(|w| w.session.as_str()).collect();
    assert_eq!(sessions.into_iter().collect::<Vec<_>>(), ["s1", "s2"]);
    assert!(
        history.ops().any(|op| op.op == Op::TargetGet {}),
        "the adapter's token reads"
    );
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

/// Replays finding `file` of targets/kubert/findings/.
fn replay(file: &str) -> (std::process::Output, String) {
    replay_finding("kubert", file)
}

#[test]
fn finding_1_a_candidate_whose_wall_clock_is_ahead_takes_over_a_live_claim() {
    let (output, line) =
        replay("1-a-candidate-with-its-wall-clock-ahead-takes-a-live-claim.run.json");
    assert_eq!(output.status.code(), Some(1), "{}", text(&output));
    assert_eq!(line, "verdict: FAIL: EXCL, EXPIRY violated — exit 1");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        stdout.contains("EXCL: s2: replica-2#1's window (token 2")
            && stdout.contains("and replica-3's window (token 3"),
        "{stdout}"
    );
    assert!(
        stdout.contains("replica-3#0 took the lease over from \"replica-2#1\""),
        "{stdout}"
    );
}

#[test]
fn finding_1b_a_restarted_candidate_takes_over_by_its_wall_clock_before_watching_a_ttl() {
    let (output, line) =
        replay("1b-a-restarted-candidate-takes-over-by-wall-clock-before-watching-a-ttl.run.json");
    assert_eq!(output.status.code(), Some(1), "{}", text(&output));
    // No clock fault: the takeover breaks the rule, and overlaps nothing.
    assert_eq!(line, "verdict: FAIL: EXPIRY violated — exit 1");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        stdout.contains(
            "replica-2#1 took the lease over from \"replica-3#0\" at 10.424 s (rv 3) after its \
             clock advanced only 0.008 s since it booted"
        ),
        "{stdout}"
    );
}
