//! The kube-leader-election target (docs/targets.md#kube-leader-election): a kube swarm run of
//! the crate, unmodified, is a real contest (leadership changes, API writes, its signal
//! recorded) and replays byte for byte; each finding of
//! targets/kube-leader-election/FINDINGS.md replays with its violation. What each expects is
//! its row of the table ([`super::table`]).

use crate::support::{
    a_swarm_run_is_a_contest, its_swarm_run_passes_check_determinism,
    the_finding_replays_with_its_violation,
};
use crate::table::{Target, target};

fn kube_leader_election() -> &'static Target {
    target("kube-leader-election")
}

#[test]
fn a_kube_swarm_run_of_the_crate_changes_leaders_and_holds_every_check() {
    a_swarm_run_is_a_contest(kube_leader_election());
}

#[test]
fn the_target_passes_check_determinism_on_that_kube_swarm_run() {
    its_swarm_run_passes_check_determinism(kube_leader_election());
}

#[test]
fn finding_1_two_candidates_that_read_a_vacated_lease_both_take_it_with_one_token() {
    the_finding_replays_with_its_violation(
        kube_leader_election(),
        "1-two-candidates-take-a-vacated-lease-at-once.run.json",
    );
}

#[test]
fn finding_2_a_candidate_whose_wall_clock_is_ahead_takes_over_a_live_lease() {
    the_finding_replays_with_its_violation(
        kube_leader_election(),
        "2-a-candidate-with-its-wall-clock-ahead-takes-a-live-lease.run.json",
    );
}

#[test]
fn finding_3_a_candidate_whose_wall_clock_is_behind_never_takes_a_vacated_lease() {
    the_finding_replays_with_its_violation(
        kube_leader_election(),
        "3-a-candidate-with-its-wall-clock-behind-never-takes-a-vacated-lease.run.json",
    );
}
