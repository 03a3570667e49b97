//! The kubert target (docs/targets.md#kubert): a kube swarm run of the crate, unmodified, is a
//! real contest (leadership changes, API writes, its signal recorded) and replays byte for
//! byte; each finding of targets/kubert/FINDINGS.md replays with its violation. What each
//! expects is its row of the table ([`super::table`]).

use leasesim::history::Op;

use crate::support::{
    a_swarm_run_is_a_contest, its_swarm_run_passes_check_determinism,
    the_finding_replays_with_its_violation,
};
use crate::table::{Target, target};

fn kubert() -> &'static Target {
    target("kubert")
}

#[test]
fn a_kube_swarm_run_of_the_crate_changes_leaders_and_passes_every_check() {
    let history = a_swarm_run_is_a_contest(kubert());
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
    its_swarm_run_passes_check_determinism(kubert());
}

#[test]
fn finding_1_a_candidate_whose_wall_clock_is_ahead_takes_over_a_live_claim() {
    the_finding_replays_with_its_violation(
        kubert(),
        "1-a-candidate-with-its-wall-clock-ahead-takes-a-live-claim.run.json",
    );
}

#[test]
fn finding_1b_a_restarted_candidate_takes_over_by_its_wall_clock_before_watching_a_ttl() {
    the_finding_replays_with_its_violation(
        kubert(),
        "1b-a-restarted-candidate-takes-over-by-wall-clock-before-watching-a-ttl.run.json",
    );
}
