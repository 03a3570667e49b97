//! LIVE's pending-work rule (docs/checks.md#live): a replica with work still pending after
//! the heal holds the session, ends the work or ends its incarnation within the bound, even
//! when nobody else wants the session.

use leasesim::check::invariants::{Check, Evidence, InvariantReport, Violation, live};
use leasesim::history::{History, NemesisAction, WorkState};

use super::build::{Builder, S, acquire, granted, history, span, unavailable};

/// The one violation of `report`.
fn one(report: &InvariantReport) -> &Violation {
    assert_eq!(report.violations.len(), 1, "{:?}", report.violations);
    &report.violations[0]
}

/// A lone replica-1 takes work for s1 at 10 s and is answered `unavailable` at 11 s (op 1,
/// the partition); everything heals at 30 s. LIVE's bound is 21.999999 s (10 s TTL, three
/// 3.333333 s renew intervals, 2 s backoff), so the work must be settled by 51.999999 s. Then
/// `then` adds what the replica did after the heal, and the run ends at `ended_at_us`.
fn lone_replica(then: impl FnOnce(Builder) -> Builder, ended_at_us: u64) -> History {
    lone_replica_on(history().config(), then, ended_at_us)
}

/// [`lone_replica`] on the backend `h`'s config line names.
fn lone_replica_on(h: Builder, then: impl FnOnce(Builder) -> Builder, ended_at_us: u64) -> History {
    let h = h
        .work("replica-1", WorkState::Taken, 10 * S)
        .op(
            1,
            "replica-1",
            span(11 * S, 13 * S),
            acquire(),
            unavailable(),
        )
        .healed_at(30 * S);
    then(h).run_ended_at(ended_at_us).build()
}

#[test]
fn live_catches_a_replica_that_stops_asking_with_its_work_pending() {
    // Nobody else wants s1, so the contention half judges nothing: only the work says that
    // replica-1 still had something to do.
    let report = live::check(&lone_replica(|h| h, 60 * S));
    assert_eq!(one(&report).invariant, Check::Live);
    assert!(
        one(&report).message.contains("stopped contending"),
        "{}",
        one(&report).message
    );
    // The evidence is the replica's last acquire of the session.
    assert_eq!(one(&report).evidence, vec![Evidence::Op(1)]);
    assert_eq!(report.checks, 1);
}

#[test]
fn live_passes_pending_work_the_replica_holds_and_runs_after_the_heal() {
    let ran = |h: Builder| {
        h.op(
            2,
            "replica-1",
            span(31 * S, 31 * S + 1000),
            acquire(),
            granted(1, 10 * S),
        )
        .work("replica-1", WorkState::Ran, 40 * S)
    };
    let report = live::check(&lone_replica(ran, 60 * S));
    assert!(report.passed(), "{:?}", report.violations);
    assert_eq!(report.checks, 1);
}

#[test]
fn live_passes_pending_work_the_replica_holds_by_the_bound_though_not_finished() {
    // A long run: granted at 31 s, still appending when the run ends.
    let holds = |h: Builder| {
        h.op(
            2,
            "replica-1",
            span(31 * S, 31 * S + 1000),
            acquire(),
            granted(1, 10 * S),
        )
    };
    let report = live::check(&lone_replica(holds, 60 * S));
    assert!(report.passed(), "{:?}", report.violations);
    assert_eq!(report.checks, 1);
}

#[test]
fn live_passes_pending_work_the_replica_drops_after_the_heal() {
    let dropped = |h: Builder| h.work("replica-1", WorkState::Dropped, 33 * S);
    let report = live::check(&lone_replica(dropped, 60 * S));
    assert!(report.passed(), "{:?}", report.violations);
    assert_eq!(report.checks, 1);
}

#[test]
fn live_does_not_count_pending_work_of_a_replica_whose_incarnation_ended() {
    // Crashed at 35 s with its work pending: the work ended with its incarnation.
    let crashed = |h: Builder| h.nemesis(35 * S, NemesisAction::Crash, "replica-1", None);
    let report = live::check(&lone_replica(crashed, 60 * S));
    assert!(report.passed(), "{:?}", report.violations);
    // Restarted: its next incarnation takes work of its own (and runs it).
    let restarted = |h: Builder| {
        h.work("replica-1#1", WorkState::Taken, 36 * S)
            .work("replica-1#1", WorkState::Ran, 40 * S)
    };
    let report = live::check(&lone_replica(restarted, 60 * S));
    assert!(report.passed(), "{:?}", report.violations);
}

#[test]
fn live_is_inconclusive_for_pending_work_when_the_run_ends_before_the_bound() {
    // The run ends at 45 s, before the bound (51.999999 s) ran out: nothing to judge yet.
    let report = live::check(&lone_replica(|h| h, 45 * S));
    assert!(report.passed(), "{:?}", report.violations);
    assert_eq!(report.checks, 0);
}

#[test]
fn live_does_not_judge_work_that_ended_before_the_heal() {
    let dropped = |h: Builder| h.work("replica-1", WorkState::Dropped, 14 * S);
    // The drop line comes after the heal marker in file order, but at 14 s: before it.
    let report = live::check(&lone_replica(dropped, 60 * S));
    assert!(report.passed(), "{:?}", report.violations);
    assert_eq!(report.checks, 0);
}

#[test]
fn live_catches_a_kube_candidate_that_stops_asking_with_its_work_pending() {
    // KubeLease: no authority, the same bound without a grace period (observed expiry).
    let report = live::check(&lone_replica_on(history().kube_config(), |h| h, 60 * S));
    assert_eq!(one(&report).invariant, Check::Live);
    let ran = |h: Builder| {
        h.op(
            2,
            "replica-1",
            span(31 * S, 31 * S + 1000),
            acquire(),
            granted(1, 10 * S),
        )
        .work("replica-1", WorkState::Ran, 40 * S)
    };
    let report = live::check(&lone_replica_on(history().kube_config(), ran, 60 * S));
    assert!(report.passed(), "{:?}", report.violations);
}
