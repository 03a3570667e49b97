//! SIGNAL over hand-built target histories (docs/checks.md#signal): a crate's own "I lead"
//! (`target_signal` lines) judged against its accepted Lease writes (`write` lines, TTL 10 s)
//! and against the other crates' signals, each finding classed by the faults on the process
//! whose lease ran out.

use leasesim::check::Check;
use leasesim::check::invariants::{Evidence, InvariantReport, signal};
use leasesim::check::judge::judge;
use leasesim::check::linearizability::Budget;
use leasesim::exit::Exit;
use leasesim::history::{NemesisAction, WriteVerb};

use super::build::{
    Builder, S, accepted_write, acquire, history, release_lease, released, span, updated,
};

/// replica-1 takes s1 at 0 s (says "I lead" at 0.01 s) and renews at 3 s and 6 s: its lease
/// runs until 16 s.
fn replica_1_leads() -> Builder {
    history()
        .kube_config()
        .accepted(0, updated("replica-1#0", 1, 1))
        .signal(1, "replica-1", 10_000, true)
        .accepted(3 * S, updated("replica-1#0", 1, 2))
        .accepted(6 * S, updated("replica-1#0", 1, 3))
}

/// replica-2 takes s1 over at 7 s (too early: replica-1's lease runs until 16 s) and says
/// "I lead" from 7.01 s to 12 s; replica-1 stops saying it at 8 s.
fn replica_2_takes_over_early(h: Builder) -> Builder {
    h.accepted(7 * S, updated("replica-2#0", 2, 4))
        .signal(2, "replica-2", 7 * S + 10_000, true)
        .signal(3, "replica-1", 8 * S, false)
        .signal(4, "replica-2", 12 * S, false)
        .run_ended_at(30 * S)
}

/// [`replica_1_leads`], with replica-1's link to `peer` held from 6.5 s to 7.5 s.
fn replica_1_leads_with_its_link_held(peer: &str) -> Builder {
    replica_1_leads()
        .nemesis(
            6 * S + 500_000,
            NemesisAction::Hold,
            "replica-1",
            Some(peer),
        )
        .nemesis(
            7 * S + 500_000,
            NemesisAction::Release,
            "replica-1",
            Some(peer),
        )
}

fn only(report: &InvariantReport) -> String {
    assert_eq!(report.violations.len(), 1, "{report:?}");
    report.violations[0].message.clone()
}

#[test]
fn a_signal_that_ends_within_its_lease_passes() {
    let h = replica_1_leads()
        .signal(2, "replica-1", 12 * S, false)
        .run_ended_at(30 * S)
        .build();
    let report = signal::check(&h);
    assert!(report.passed() && report.allowed.is_empty(), "{report:?}");
    assert_eq!(report.checks, 1);
}

#[test]
fn a_signal_past_its_last_write_plus_the_ttl_outlives_the_lease() {
    let h = replica_1_leads()
        .op(
            2,
            "replica-1",
            span(20 * S, 20 * S),
            release_lease(1),
            released(),
        )
        .run_ended_at(30 * S)
        .build();
    let report = signal::check(&h);
    let message = only(&report);
    assert!(message.contains("outlives the lease"), "{message}");
    assert!(
        message.contains("ended at 16.000 s: 4.000 s past it"),
        "{message}"
    );
    assert_eq!(
        report.violations[0].evidence,
        [
            Evidence::Op(1),
            accepted_write(WriteVerb::Update, "replica-1#0", 1, 3, 6 * S)
        ]
    );
}

#[test]
fn a_signal_with_no_write_naming_its_process_outlives_the_lease_from_its_start() {
    let h = history()
        .kube_config()
        .signal(1, "replica-1", S, true)
        .signal(2, "replica-1", 2 * S, false)
        .build();
    let message = only(&signal::check(&h));
    assert!(
        message.contains("no accepted write names it holder"),
        "{message}"
    );
}

#[test]
fn the_adapter_letting_a_refused_crate_go_ends_its_signal() {
    // replica-1's acquire is refused at 5 s (its crate is let go), long before 16 s.
    let refused = super::build::held(1);
    let h = replica_1_leads()
        .op(2, "replica-1", span(4 * S, 5 * S), acquire(), refused)
        .run_ended_at(30 * S)
        .build();
    assert!(signal::check(&h).passed());
}

#[test]
fn a_crash_ends_the_signal_where_the_host_stopped() {
    let h = replica_1_leads()
        .nemesis(9 * S, NemesisAction::Crash, "replica-1", None)
        .run_ended_at(30 * S)
        .build();
    let report = signal::check(&h);
    assert!(report.passed(), "{report:?}");
}

#[test]
fn two_leaders_with_no_fault_on_the_old_one_is_a_violation() {
    let h = replica_2_takes_over_early(replica_1_leads()).build();
    let report = signal::check(&h);
    let message = only(&report);
    assert!(
        message.contains("two leaders: replica-1 says \"I lead\" from 0.010 s and replica-2 from 7.010 s; both until 8.000 s"),
        "{message}"
    );
    assert_eq!(
        report.violations[0].evidence,
        [Evidence::Op(1), Evidence::Op(2)]
    );
    assert!(
        judge(&h, Budget::default())
            .violated()
            .contains(&Check::Signal)
    );
}

#[test]
fn a_clock_fault_on_the_new_leader_alone_still_makes_two_leaders() {
    let h = replica_2_takes_over_early(replica_1_leads().nemesis(
        S,
        NemesisAction::WallOffset,
        "replica-2",
        None,
    ))
    .build();
    assert!(only(&signal::check(&h)).contains("two leaders"));
}

#[test]
fn an_overlap_while_the_old_leaders_link_is_held_is_allowed_not_violated() {
    let h = replica_2_takes_over_early(replica_1_leads_with_its_link_held("apiserver")).build();
    let report = signal::check(&h);
    assert!(report.passed(), "{report:?}");
    assert_eq!(report.allowed.len(), 1, "{report:?}");
    assert!(
        report.allowed[0]
            .message
            .starts_with("unfenced overlap (expected without fencing)")
    );
    // Allowed is never a finding: with the other checks' findings set aside (EXPIRY sees the
    // early takeover), the run is clean.
    let judgement = judge(&h, Budget::default());
    let others: Vec<Check> = judgement.violated();
    assert!(!others.contains(&Check::Signal));
    assert_eq!(judgement.exit_code_expecting(&others), Exit::Clean);
}

#[test]
fn a_hold_on_another_link_of_the_old_leader_excuses_nothing() {
    // replica-1's link to the ledger, not to the API server, is held over the overlap.
    let h = replica_2_takes_over_early(replica_1_leads_with_its_link_held("ledger")).build();
    assert!(only(&signal::check(&h)).contains("two leaders"));
}

#[test]
fn an_overlap_that_outlasts_the_hold_by_more_than_a_renew_interval_is_violated() {
    // The hold ends at 7.5 s; replica-1 still says "I lead" at 11 s (> 7.5 s + 3.33 s).
    let h = replica_1_leads_with_its_link_held("apiserver")
        .accepted(7 * S, updated("replica-2#0", 2, 4))
        .signal(2, "replica-2", 7 * S + 10_000, true)
        .signal(3, "replica-1", 11 * S, false)
        .signal(4, "replica-2", 12 * S, false)
        .run_ended_at(30 * S)
        .build();
    assert!(only(&signal::check(&h)).contains("two leaders"));
}

#[test]
fn an_overlap_after_a_clock_fault_on_the_old_leader_is_allowed() {
    let h = replica_2_takes_over_early(replica_1_leads().nemesis(
        2 * S,
        NemesisAction::WallJump,
        "replica-1",
        None,
    ))
    .build();
    let report = signal::check(&h);
    assert!(report.passed(), "{report:?}");
    assert!(
        report.allowed[0]
            .message
            .starts_with("under a clock fault on replica-1")
    );
}

#[test]
fn a_history_without_signals_is_not_judged() {
    // A release (of our own lease) is no signal.
    let h = history()
        .kube_config()
        .accepted(0, updated("replica-1#0", 1, 1))
        .op(1, "replica-1", span(S, S), release_lease(1), released())
        .build();
    assert_eq!(
        signal::check(&h).not_judged().as_deref(),
        Some("no target_signal lines: only a target crate reports its own \"I lead\"")
    );
}
