//! DEFINITE on hand-built histories: an operation reported `fail` whose effect the history
//! shows is caught with the op and the line that shows it; a `fail` with no effect passes; a
//! history without `fail` operations is not judged.

use leasesim::check::invariants::{Check, Evidence, InvariantReport, Violation, definite};
use leasesim::history::WriteVerb;

use super::build::{
    S, accepted_write, acquire, appended, at, conflict, created, event_record, fence_record, fenced, grant,
    granted, held, history, journal_append, kube_conflict, kube_create, kube_object,
    kube_unavailable, kube_update, ledger_append, ledger_unavailable, p, refuse_acquire, renew,
    renew_lease, span, unknown, updated,
};

fn one(report: &InvariantReport) -> &Violation {
    assert_eq!(report.violations.len(), 1, "{:?}", report.violations);
    &report.violations[0]
}

fn decided(replica: &str, at_us: u64) -> Evidence {
    Evidence::Decision {
        session: "s1".into(),
        owner: p(replica),
        at_authority_us: at_us,
        at_us,
    }
}

/// replica-1's journal: fence at seq 1, event 1 at seq 2.
fn journal_ledger() -> super::build::Builder {
    history()
        .config()
        .ledger(1, fence_record(1, "replica-1"))
        .ledger(2, event_record("replica-1", 1))
}

#[test]
fn a_journal_append_reported_fenced_whose_event_is_in_the_final_ledger_is_caught() {
    // The example: the first ok journal_append rewritten as fenced; the record stays.
    let h = journal_ledger()
        .op(1, "replica-1", span(S, 2 * S), journal_append(1), fenced(1))
        .build();
    let report = definite::check(&h);
    let violation = one(&report);
    assert_eq!(violation.invariant, Check::Definite);
    assert_eq!(
        violation.evidence,
        [Evidence::Op(1), Evidence::seq("s1", 2)]
    );
    assert!(
        violation.message.contains("reported fail (fenced)"),
        "{violation}"
    );
}

#[test]
fn a_journal_append_reported_fail_whose_event_is_absent_passes() {
    let h = history()
        .config()
        .ledger(1, fence_record(1, "replica-1"))
        .op(1, "replica-1", span(S, 2 * S), journal_append(1), fenced(1))
        .build();
    let report = definite::check(&h);
    assert!(report.passed(), "{:?}", report.violations);
    assert_eq!(report.checks, 1);
}

#[test]
fn a_definite_failure_retried_with_success_is_the_retry_s_record() {
    // Unavailable wrote nothing; the same event (writer id, seq_in_writer) was sent again and
    // committed: the record is the retry's.
    let h = journal_ledger()
        .op(1, "replica-1", span(S, 2 * S), journal_append(1), ledger_unavailable())
        .op(2, "replica-1", span(3 * S, 4 * S), journal_append(1), appended(2))
        .build();
    assert!(definite::check(&h).passed());
}

#[test]
fn a_ledger_append_reported_conflict_whose_record_is_in_the_final_ledger_is_caught() {
    let record = event_record("replica-1", 1);
    let h = journal_ledger()
        .op(
            1,
            "replica-1",
            span(S, 2 * S),
            ledger_append(1, record),
            conflict(2),
        )
        .build();
    assert_eq!(
        one(&definite::check(&h)).evidence,
        [Evidence::Op(1), Evidence::seq("s1", 2)]
    );
}

#[test]
fn a_conflict_after_an_unknown_try_of_the_same_record_is_that_try_s_effect() {
    // The first try timed out but committed; the retry's CAS then found it there.
    let record = event_record("replica-1", 1);
    let h = journal_ledger()
        .op(
            1,
            "replica-1",
            span(S, 2 * S),
            ledger_append(1, record.clone()),
            unknown(),
        )
        .op(
            2,
            "replica-1",
            span(3 * S, 4 * S),
            ledger_append(1, record),
            conflict(2),
        )
        .build();
    assert!(definite::check(&h).passed());
}

#[test]
fn a_history_without_fail_operations_is_not_judged() {
    let h = journal_ledger()
        .op(1, "replica-1", span(S, 2 * S), journal_append(1), appended(2))
        .build();
    let report = definite::check(&h);
    assert!(report.passed());
    assert!(report.not_judged().is_some(), "{report:?}");
}

#[test]
fn an_acquire_reported_held_that_the_authority_granted_is_caught() {
    let h = history()
        .config()
        .op(1, "replica-1", span(S, 2 * S), acquire(), held(1))
        .decides(at(S + S / 2), "replica-1", grant(1, 11 * S))
        .build();
    let report = definite::check(&h);
    assert_eq!(
        one(&report).evidence,
        [Evidence::Op(1), decided("replica-1", S + S / 2)]
    );
}

#[test]
fn an_acquire_reported_held_that_the_authority_refused_passes() {
    let h = history()
        .config()
        .decides(at(0), "replica-2", grant(1, 10 * S))
        .op(1, "replica-1", span(S, 2 * S), acquire(), held(1))
        .decides(at(S + S / 2), "replica-1", refuse_acquire(Some(1)))
        .build();
    let report = definite::check(&h);
    assert!(report.passed(), "{:?}", report.violations);
    assert_eq!(report.checks, 1);
}

#[test]
fn a_renew_reported_held_that_the_authority_renewed_is_caught() {
    let h = history()
        .config()
        .op(1, "replica-1", span(0, S), acquire(), granted(1, 10 * S))
        .decides(at(S / 2), "replica-1", grant(1, 10 * S))
        .op(2, "replica-1", span(3 * S, 4 * S), renew_lease(1), held(1))
        .decides(at(3 * S + S / 2), "replica-1", renew(1, 13 * S))
        .build();
    assert_eq!(
        one(&definite::check(&h)).evidence,
        [Evidence::Op(2), decided("replica-1", 3 * S + S / 2)]
    );
}

#[test]
fn a_decision_one_of_whose_possible_calls_was_not_a_fail_is_not_judged_against_the_fail() {
    // Two acquires of replica-1 overlap the grant: the ok one can be the call it answered.
    let h = history()
        .config()
        .op(1, "replica-1", span(S, 2 * S), acquire(), held(1))
        .op(2, "replica-1", span(S, 2 * S), acquire(), granted(1, 10 * S))
        .decides(at(S + S / 2), "replica-1", grant(1, 11 * S))
        .build();
    assert!(definite::check(&h).passed());
}

#[test]
fn a_kube_update_reported_conflict_whose_write_the_server_accepted_is_caught() {
    let h = history()
        .kube_config()
        .accepted(0, created("replica-1#0", 1, 1))
        .op(1, "replica-1", span(0, S / 2), kube_create("replica-1#0", 1), kube_object(1, "replica-1#0", 1))
        .op(
            2,
            "replica-2",
            span(20 * S, 21 * S),
            kube_update(Some(1), "replica-2#0", 2),
            kube_conflict(),
        )
        .accepted(20 * S + S / 2, updated("replica-2#0", 2, 2))
        .build();
    let report = definite::check(&h);
    assert_eq!(
        one(&report).evidence,
        [
            Evidence::Op(2),
            accepted_write(WriteVerb::Update, "replica-2#0", 2, 2, 20 * S + S / 2)
        ]
    );
}

#[test]
fn a_kube_update_reported_conflict_after_another_write_passes() {
    // replica-3 won the race from the same read: its write is its own, and replica-2's 409 is
    // true.
    let h = history()
        .kube_config()
        .accepted(0, created("replica-1#0", 1, 1))
        .op(
            1,
            "replica-3",
            span(20 * S, 21 * S),
            kube_update(Some(1), "replica-3#0", 2),
            kube_object(2, "replica-3#0", 2),
        )
        .op(
            2,
            "replica-2",
            span(20 * S, 21 * S),
            kube_update(Some(1), "replica-2#0", 2),
            kube_conflict(),
        )
        .accepted(20 * S + S / 2, updated("replica-3#0", 2, 2))
        .build();
    let report = definite::check(&h);
    assert!(report.passed(), "{:?}", report.violations);
    assert_eq!(report.checks, 1);
}

#[test]
fn a_kube_update_answered_503_is_not_a_definite_failure() {
    // A 5xx is `info`: it may have been applied, and it was.
    let h = history()
        .kube_config()
        .accepted(0, created("replica-1#0", 1, 1))
        .op(
            1,
            "replica-2",
            span(20 * S, 21 * S),
            kube_update(Some(1), "replica-2#0", 2),
            kube_unavailable(),
        )
        .accepted(20 * S + S / 2, updated("replica-2#0", 2, 2))
        .build();
    let report = definite::check(&h);
    assert!(report.passed());
    assert!(report.not_judged().is_some());
}
