//! Hand-built histories: for each invariant one that violates it, caught with the right
//! evidence, and a clean one that passes. Each history is built with [`super::build`].

use leasesim::check::invariants::{
    Check, Evidence, InvariantReport, check_all, excl, expiry, fence, ledger, live, stop, token,
};
use leasesim::history::{HistLeaseUse, History};

use super::build::{
    FREE, S, acquire, appended, at, boot, event_record, fence_record, grant, granted, held,
    held_by, history, journal_append, judges_valid, ledger_append, p, reading, refuse_acquire,
    refuse_renew, release_ended, release_ending_nothing, renew, renew_lease, span,
};

fn decided(replica: &str, at_authority_us: u64, at_us: u64) -> Evidence {
    Evidence::Decision {
        session: "s1".into(),
        owner: p(replica),
        at_authority_us,
        at_us,
    }
}

fn seq(seq: u64) -> Evidence {
    Evidence::seq("s1", seq)
}

fn checked(replica: &str, at: u64) -> Evidence {
    Evidence::Validity {
        process: p(replica),
        session: "s1".into(),
        at_local_us: at,
        at_us: at,
    }
}

/// The one violation of `report`.
fn one(report: &InvariantReport) -> &leasesim::check::invariants::Violation {
    assert_eq!(report.violations.len(), 1, "{:?}", report.violations);
    &report.violations[0]
}

// TOKEN

#[test]
fn token_takeover_without_a_higher_token_is_caught() {
    let h = history()
        .config()
        .decides(at(0), "replica-1", grant(1, 10 * S))
        .decides(at(20 * S), "replica-2", grant(1, 30 * S))
        .build();
    let report = token::check(&h);
    let violation = one(&report);
    assert_eq!(violation.invariant, Check::Token);
    assert_eq!(
        violation.evidence,
        [
            decided("replica-1", 0, 0),
            decided("replica-2", 20 * S, 20 * S)
        ]
    );
}

#[test]
fn token_live_reacquire_with_a_new_token_is_caught() {
    let h = history()
        .decides(at(0), "replica-1", grant(1, 10 * S))
        .decides(at(5 * S), "replica-1", grant(2, 15 * S))
        .build();
    let report = token::check(&h);
    assert_eq!(
        one(&report).evidence,
        [
            decided("replica-1", 0, 0),
            decided("replica-1", 5 * S, 5 * S)
        ]
    );
}

#[test]
fn token_renew_and_live_reacquire_keep_it_and_takeovers_raise_it() {
    let h = history()
        .decides(at(0), "replica-1", grant(1, 10 * S))
        .decides(at(3 * S), "replica-1", renew(1, 13 * S))
        .decides(at(5 * S), "replica-1", grant(1, 15 * S))
        .decides(at(20 * S), "replica-2", grant(2, 30 * S))
        .decides(at(21 * S), "replica-2", release_ended(2))
        .decides(at(22 * S), "replica-2", grant(3, 32 * S))
        .build();
    let report = token::check(&h);
    assert!(report.passed(), "{:?}", report.violations);
    assert_eq!(report.checks, 5);
}

// EXCL

#[test]
fn excl_grant_while_another_lease_is_unexpired_is_caught() {
    let h = history()
        .decides(at(0), "replica-1", grant(1, 10 * S))
        .decides(at(5 * S), "replica-2", grant(2, 15 * S))
        .build();
    let report = excl::check(&h);
    let violation = one(&report);
    assert_eq!(violation.invariant, Check::Excl);
    assert_eq!(
        violation.evidence,
        [
            decided("replica-1", 0, 0),
            decided("replica-2", 5 * S, 5 * S)
        ]
    );
}

#[test]
fn excl_stale_renew_granted_is_caught() {
    let h = history()
        .decides(at(0), "replica-1", grant(1, 10 * S))
        .decides(at(12 * S), "replica-2", grant(2, 22 * S))
        .decides(at(13 * S), "replica-1", renew(1, 23 * S))
        .build();
    let report = excl::check(&h);
    assert_eq!(
        one(&report).evidence,
        [
            decided("replica-2", 12 * S, 12 * S),
            decided("replica-1", 13 * S, 13 * S)
        ]
    );
}

#[test]
fn excl_a_lease_from_before_an_authority_restart_is_still_live_after_it() {
    // Boot 0 from 0; the authority restarts at 9 s and its clock starts again at 0. A is
    // granted at 8 s, to 18 s.
    let restarted = || {
        history()
            .lease_clock(boot(0))
            .lease_clock(boot(1).from(9 * S))
            .decides(at(8 * S), "replica-1", grant(1, 18 * S))
    };
    // At true 12 s (boot 1 reads 3 s) A's lease (true expiry 18 s) is live.
    let h = restarted()
        .decides(reading(3 * S, 12 * S), "replica-2", grant(2, 13 * S))
        .build();
    let report = excl::check(&h);
    assert_eq!(
        one(&report).evidence,
        [
            decided("replica-1", 8 * S, 8 * S),
            decided("replica-2", 3 * S, 12 * S)
        ]
    );
    // At true 20 s (boot 1 reads 11 s < A's 18 s) it is over: comparing readings of two
    // boots would wrongly call this a violation.
    let h = restarted()
        .decides(reading(11 * S, 20 * S), "replica-2", grant(2, 21 * S))
        .build();
    let report = excl::check(&h);
    assert!(report.passed(), "{:?}", report.violations);
}

#[test]
fn excl_release_then_grant_passes_and_a_stale_release_changes_nothing() {
    let h = history()
        .decides(at(0), "replica-1", grant(1, 10 * S))
        .decides(at(2 * S), "replica-1", release_ended(1))
        .decides(at(3 * S), "replica-2", grant(2, 13 * S))
        .decides(at(4 * S), "replica-1", release_ending_nothing(1))
        .decides(at(5 * S), "replica-2", renew(2, 15 * S))
        .decides(at(16 * S), "replica-1", grant(3, 26 * S))
        .build();
    let report = excl::check(&h);
    assert!(report.passed(), "{:?}", report.violations);
    assert_eq!(report.checks, 6);
}

#[test]
fn excl_a_stale_release_that_frees_the_live_hold_is_caught_by_what_follows() {
    // The release-by-session-only mutant, as the world records it: replica-2's stale release
    // is answered `ended: false`, yet afterwards replica-1's live lease is gone.
    let stale_release = || {
        history()
            .decides(at(0), "replica-2", grant(1, 10 * S))
            .decides(at(12 * S), "replica-1", grant(2, 22 * S))
            .decides(at(13 * S), "replica-2", release_ending_nothing(1))
    };
    let h = stale_release()
        .decides(at(14 * S), "replica-1", refuse_renew(2, FREE))
        .build();
    let report = excl::check(&h);
    let violation = one(&report);
    assert!(
        violation.message.contains("replica-2's release")
            && violation
                .message
                .contains(", a stale release, changed something"),
        "{violation}"
    );
    assert_eq!(
        violation.evidence,
        [
            decided("replica-1", 12 * S, 12 * S),
            decided("replica-2", 13 * S, 13 * S),
            decided("replica-1", 14 * S, 14 * S)
        ]
    );
    // A stale release after which the hold is still there changed nothing.
    let h = stale_release()
        .decides(at(14 * S), "replica-2", refuse_acquire(held_by(2)))
        .decides(at(15 * S), "replica-1", renew(2, 25 * S))
        .build();
    let report = excl::check(&h);
    assert!(report.passed(), "{:?}", report.violations);
}

// EXPIRY

#[test]
fn expiry_takeover_before_the_renewed_bound_is_caught() {
    // Granted to 10 s, renewed at 4 s to 14 s; a takeover at 12 s ends it early (after the
    // first expiry, before the bound of the last acknowledgement).
    let renewed = || {
        history()
            .decides(at(0), "replica-1", grant(1, 10 * S))
            .decides(at(4 * S), "replica-1", renew(1, 14 * S))
    };
    let h = renewed()
        .decides(at(12 * S), "replica-2", grant(2, 22 * S))
        .build();
    let report = expiry::check(&h);
    let violation = one(&report);
    assert_eq!(violation.invariant, Check::Expiry);
    assert!(
        violation
            .message
            .contains("was granted token 2 while replica-1's token-1 lease"),
        "{violation}"
    );
    assert!(
        violation
            .message
            .contains("read 12.000 s, before the bound 14.000 s"),
        "{violation}"
    );
    assert_eq!(
        violation.evidence,
        [
            decided("replica-1", 4 * S, 4 * S),
            decided("replica-2", 12 * S, 12 * S)
        ]
    );
    // At the bound itself (`now >= expiry` is expired) the takeover is on time.
    let h = renewed()
        .decides(at(14 * S), "replica-2", grant(2, 24 * S))
        .build();
    let report = expiry::check(&h);
    assert!(report.passed(), "{:?}", report.violations);
    assert_eq!(report.checks, 3);
}

#[test]
fn expiry_a_refused_own_renew_a_free_session_and_a_new_token_are_early_ends() {
    let h = history()
        .decides(at(0), "replica-1", grant(1, 10 * S))
        // The holder's own renew refused although its lease runs to 10 s.
        .decides(at(3 * S), "replica-1", refuse_renew(1, held_by(1)))
        // An acquire told the session is free.
        .decides(at(4 * S), "replica-2", refuse_acquire(FREE))
        // The holder re-acquires and gets a new token: its lease was ended, not kept.
        .decides(at(5 * S), "replica-1", grant(2, 15 * S))
        // Told it is held by the current token: consistent, no violation.
        .decides(at(6 * S), "replica-2", refuse_acquire(held_by(2)))
        .build();
    let report = expiry::check(&h);
    let messages: Vec<&str> = report
        .violations
        .iter()
        .map(|v| v.message.as_str())
        .collect();
    assert_eq!(report.violations.len(), 3, "{messages:?}");
    assert!(
        messages[0].contains("replica-1's renew") && messages[0].contains("was refused"),
        "{messages:?}"
    );
    assert!(
        messages[1].contains("the session said to be free"),
        "{messages:?}"
    );
    assert!(
        messages[2].contains("replica-1's acquire") && messages[2].contains("was granted token 2"),
        "{messages:?}"
    );
    for (violation, at) in report.violations.iter().zip([3, 4, 5]) {
        assert_eq!(violation.evidence[0], decided("replica-1", 0, 0));
        let Evidence::Decision { at_us, .. } = &violation.evidence[1] else {
            panic!("{violation}");
        };
        assert_eq!(*at_us, at * S, "{violation}");
    }
}

#[test]
fn expiry_own_early_release_then_takeover_passes() {
    let h = history()
        .decides(at(0), "replica-1", grant(1, 10 * S))
        .decides(at(2 * S), "replica-1", release_ended(1))
        .decides(at(3 * S), "replica-2", grant(2, 13 * S))
        // A stale release by the old holder afterwards ends nothing.
        .decides(at(4 * S), "replica-1", release_ending_nothing(1))
        .decides(at(5 * S), "replica-1", refuse_acquire(held_by(2)))
        .decides(at(6 * S), "replica-2", renew(2, 16 * S))
        .build();
    let report = expiry::check(&h);
    assert!(report.passed(), "{:?}", report.violations);
    assert_eq!(report.checks, 6);
    // A release by someone else is not the holder's own: a takeover after it is early.
    let h = history()
        .decides(at(0), "replica-1", grant(1, 10 * S))
        .decides(at(2 * S), "replica-2", release_ended(1))
        .decides(at(3 * S), "replica-2", grant(2, 13 * S))
        .build();
    assert_eq!(
        one(&expiry::check(&h)).evidence,
        [
            decided("replica-1", 0, 0),
            decided("replica-2", 3 * S, 3 * S)
        ]
    );
}

#[test]
fn expiry_is_judged_on_the_authority_monotonic_clock_not_true_time() {
    // The authority's monotonic clock reads 100 s behind true time and runs 10% slow: the
    // bound is 10 s of *its* readings (110 s ... 120 s local, true 233.3 s), so a takeover at
    // true 220 s (local 118 s) is early and one at local 120 s is on time. Wall-clock steps
    // never enter: decisions carry monotonic readings only.
    let slow_authority = || {
        history()
            .lease_clock(boot(0).from(100 * S).reads(100 * S).drift_ppm(-100_000))
            .decides(reading(110 * S, 200 * S), "replica-1", grant(1, 120 * S))
    };
    let early = slow_authority()
        .decides(reading(118 * S, 220 * S), "replica-2", grant(2, 128 * S))
        .build();
    let report = expiry::check(&early);
    assert!(
        one(&report).message.contains("before the bound 120.000 s"),
        "{:?}",
        report.violations
    );
    let on_time = slow_authority()
        .decides(
            reading(120 * S, 222_222_223),
            "replica-2",
            grant(2, 130 * S),
        )
        .build();
    let report = expiry::check(&on_time);
    assert!(report.passed(), "{:?}", report.violations);
}

#[test]
fn expiry_carries_the_remaining_lifetime_over_authority_restarts_as_uptime() {
    // Boot 0 from true 0; the authority restarts at true 9 s (boot 1, clock from 0) and
    // again at true 12 s (boot 2, clock from 0). A lease granted at 8 s to 18 s has 9 s left
    // when boot 0 ends and 6 s after boot 1's 3 s of uptime: in boot 2 it runs to 6 s
    // (less 1 µs per restart for rounding).
    let with = |late: super::build::When, expiry_us: u64| {
        history()
            .lease_clock(boot(0))
            .lease_clock(boot(1).from(9 * S))
            .lease_clock(boot(2).from(12 * S))
            .decides(at(8 * S), "replica-1", grant(1, 18 * S))
            .decides(late, "replica-2", grant(2, expiry_us))
            .build()
    };
    let report = expiry::check(&with(reading(5 * S, 17 * S), 15 * S));
    let violation = one(&report);
    assert!(
        violation.message.contains(
            "read 5.000 s in boot 2, before the bound 5.999998 s there (expiry 18.000 s in boot 0"
        ),
        "{violation}"
    );
    assert_eq!(
        violation.evidence,
        [
            decided("replica-1", 8 * S, 8 * S),
            decided("replica-2", 5 * S, 17 * S)
        ]
    );
    // In boot 1 (true 10 s, reading 1 s: 8 s of the 9 s left) it is still live.
    let report = expiry::check(&with(reading(S, 10 * S), 11 * S));
    assert_eq!(one(&report).evidence[1], decided("replica-2", S, 10 * S));
    // Once the carried-over lifetime has run out the takeover is on time, although the
    // reading (6 s) is far below the boot-0 expiry (18 s).
    let report = expiry::check(&with(reading(6 * S, 18 * S), 16 * S));
    assert!(report.passed(), "{:?}", report.violations);
    // Downtime counts as zero: with boot 0's clock stopped from its crash at 9 s until the
    // restart at 20 s, the lease still has 9 s of authority uptime left at true 25 s.
    let h = history()
        .lease_clock(boot(0))
        .lease_clock(boot(0).from(9 * S).reads(9 * S).suspended())
        .lease_clock(boot(1).from(20 * S))
        .decides(at(8 * S), "replica-1", grant(1, 18 * S))
        .decides(reading(5 * S, 25 * S), "replica-2", grant(2, 15 * S))
        .build();
    assert_eq!(one(&expiry::check(&h)).invariant, Check::Expiry);
}

// FENCE

#[test]
fn fence_record_of_a_fenced_writer_is_caught() {
    let h = history()
        .ledger(1, fence_record(1, "replica-1"))
        .ledger(2, event_record("replica-1", 1))
        .ledger(3, fence_record(2, "replica-2"))
        .ledger(4, event_record("replica-1", 2))
        .build();
    let report = fence::check(&h);
    let violation = one(&report);
    assert_eq!(violation.invariant, Check::Fence);
    assert_eq!(violation.evidence, [seq(1), seq(3), seq(4)]);
}

#[test]
fn fence_epochs_that_do_not_increase_are_caught() {
    let h = history()
        .ledger(1, fence_record(2, "replica-1"))
        .ledger(2, fence_record(2, "replica-2"))
        .build();
    assert_eq!(one(&fence::check(&h)).evidence, [seq(1), seq(2)]);
}

#[test]
fn fence_clean_handover_passes() {
    let h = history()
        .ledger(1, fence_record(1, "replica-1"))
        .ledger(2, event_record("replica-1", 1))
        .ledger(3, fence_record(2, "replica-2"))
        .ledger(4, event_record("replica-2", 1))
        .build();
    let report = fence::check(&h);
    assert!(report.passed(), "{:?}", report.violations);
    assert_eq!(report.checks, 4);
}

// LEDGER

/// replica-1 appends its fence (op 1) then event 1 (op 2), both acknowledged.
fn fence_then_event_acknowledged() -> super::build::Builder {
    let appending = span(S, S + 1000);
    history()
        .op(
            1,
            "replica-1",
            appending,
            ledger_append(0, fence_record(1, "replica-1")),
            appended(1),
        )
        .op(
            2,
            "replica-1",
            appending,
            ledger_append(1, event_record("replica-1", 1)),
            appended(2),
        )
}

#[test]
fn ledger_acknowledged_append_overwritten_is_caught() {
    let h = fence_then_event_acknowledged()
        .ledger(1, fence_record(1, "replica-1"))
        .ledger(2, event_record("replica-1", 2))
        .build();
    let report = ledger::check(&h);
    let violation = one(&report);
    assert_eq!(violation.invariant, Check::Ledger);
    assert_eq!(violation.evidence, [Evidence::Op(2), seq(2)]);
}

#[test]
fn ledger_gap_and_duplicate_are_caught() {
    let h = history()
        .ledger(1, fence_record(1, "replica-1"))
        .ledger(3, fence_record(1, "replica-1"))
        .build();
    let report = ledger::check(&h);
    assert_eq!(report.violations.len(), 2, "{:?}", report.violations);
    assert_eq!(report.violations[0].evidence, [seq(3)]);
    assert_eq!(report.violations[1].evidence, [seq(1), seq(3)]);
}

#[test]
fn ledger_clean_chain_passes() {
    let h = fence_then_event_acknowledged()
        .ledger(1, fence_record(1, "replica-1"))
        .ledger(2, event_record("replica-1", 1))
        .build();
    let report = ledger::check(&h);
    assert!(report.passed(), "{:?}", report.violations);
    assert_eq!(report.checks, 3);
}

// STOP

#[test]
fn stop_check_after_valid_until_is_caught_whatever_the_replica_claims() {
    // valid_until = 0 + 10 s − 1 s = 9 s; the replica claims 20 s.
    let h = history()
        .config()
        .op(1, "replica-1", span(0, 1000), acquire(), granted(1, 10 * S))
        .validity(
            judges_valid("replica-1", 1)
                .at(9 * S + 500_000)
                .claiming_until(20 * S),
        )
        .build();
    let report = stop::check(&h);
    let violation = one(&report);
    assert_eq!(violation.invariant, Check::Stop);
    assert_eq!(
        violation.evidence,
        [Evidence::Op(1), checked("replica-1", 9 * S + 500_000)]
    );
}

/// replica-1 got token 1 at 0 (valid until 9 s on its clock) and never renewed; replica-2
/// took over with token 2 at 11 s and fenced, so the ledger refuses whatever replica-1 sends:
/// only STOP sees replica-1's late decision.
fn taken_over_then_judged(purpose: HistLeaseUse, at_us: u64) -> History {
    history()
        .config()
        .op(1, "replica-1", span(0, 1000), acquire(), granted(1, 10 * S))
        .op(
            2,
            "replica-2",
            span(11 * S, 11 * S + 1000),
            acquire(),
            granted(2, 10 * S),
        )
        .ledger(1, fence_record(2, "replica-2"))
        .validity(
            judges_valid("replica-1", 1)
                .to(purpose)
                .at(at_us)
                .claiming_until(27 * S),
        )
        .build()
}

#[test]
fn stop_a_journal_open_past_the_holders_deadline_is_caught_though_the_fence_saves_it() {
    let h = taken_over_then_judged(HistLeaseUse::JournalOpen, 12 * S);
    let report = stop::check(&h);
    let violation = one(&report);
    assert_eq!(violation.invariant, Check::Stop);
    assert_eq!(
        violation.evidence,
        [Evidence::Op(1), checked("replica-1", 12 * S)]
    );
    assert!(
        violation
            .message
            .contains("valid to open its journal at 12.000 s"),
        "{}",
        violation.message
    );
    assert!(fence::check(&h).passed(), "the ledger itself is sound");
}

#[test]
fn stop_a_cleanup_append_past_the_holders_deadline_is_caught_though_the_fence_saves_it() {
    let h = taken_over_then_judged(HistLeaseUse::CleanupAppend, 17 * S);
    let report = stop::check(&h);
    let violation = one(&report);
    assert_eq!(
        violation.evidence,
        [Evidence::Op(1), checked("replica-1", 17 * S)]
    );
    assert!(
        violation
            .message
            .contains("valid for its clean-up append at 17.000 s"),
        "{}",
        violation.message
    );
    assert!(fence::check(&h).passed(), "the ledger itself is sound");
}

#[test]
fn stop_an_open_and_a_cleanup_append_within_validity_pass() {
    let h = history()
        .config()
        .op(1, "replica-1", span(0, 1000), acquire(), granted(1, 10 * S))
        .validity(
            judges_valid("replica-1", 1)
                .to(HistLeaseUse::JournalOpen)
                .at(1000)
                .claiming_until(9 * S),
        )
        .validity(
            judges_valid("replica-1", 1)
                .to(HistLeaseUse::CleanupAppend)
                .at(9 * S - 1)
                .claiming_until(9 * S),
        )
        .build();
    let report = stop::check(&h);
    assert!(report.passed(), "{:?}", report.violations);
    assert_eq!(report.checks, 2);
}

/// replica-1 was granted 4 s (less than the configured 10 s, as a target adapter grants what
/// is left of a claim) at 0, and judged its lease valid at `at_us` on its clock.
fn short_grant_judged_at(at_us: u64) -> History {
    history()
        .config()
        .op(1, "replica-1", span(0, 1000), acquire(), granted(1, 4 * S))
        .validity(judges_valid("replica-1", 1).at(at_us).claiming_until(at_us))
        .build()
}

#[test]
fn stop_uses_the_granted_ttl_not_the_config() {
    // The config's margin is 1 s of 10 s: a grant of 4 s has 0.4 s, valid_until = 3.6 s
    // (neither 10 s − 1 s nor 4 s − 1 s).
    let report = stop::check(&short_grant_judged_at(3 * S + 500_000));
    assert!(report.passed(), "{:?}", report.violations);
    assert_eq!(report.checks, 1);

    let report = stop::check(&short_grant_judged_at(3 * S + 600_000));
    let violation = one(&report);
    assert_eq!(
        violation.evidence,
        [Evidence::Op(1), checked("replica-1", 3 * S + 600_000)]
    );
    assert!(
        violation
            .message
            .contains("valid_until 3.600 s: its acquire (op 1) was sent at 0.000 s on its clock, + TTL 4.000 s - skew margin 0.400 s"),
        "{violation}"
    );
}

#[test]
fn stop_check_after_observed_loss_is_caught() {
    let h = history()
        .config()
        .op(1, "replica-1", span(0, 1000), acquire(), granted(1, 10 * S))
        .op(2, "replica-1", span(4 * S, 5 * S), renew_lease(1), held(2))
        .validity(judges_valid("replica-1", 1).at(6 * S).claiming_until(9 * S))
        .build();
    assert_eq!(
        one(&stop::check(&h)).evidence,
        [Evidence::Op(2), checked("replica-1", 6 * S)]
    );
}

#[test]
fn stop_checks_within_validity_pass_and_a_renew_moves_it() {
    let h = history()
        .config()
        .op(1, "replica-1", span(0, 1000), acquire(), granted(1, 10 * S))
        .validity(judges_valid("replica-1", 1).at(8 * S).claiming_until(9 * S))
        .op(
            2,
            "replica-1",
            span(5 * S, 5 * S + 1000),
            renew_lease(1),
            granted(1, 10 * S),
        )
        .validity(
            judges_valid("replica-1", 1)
                .at(13 * S)
                .claiming_until(14 * S),
        )
        .build();
    let report = stop::check(&h);
    assert!(report.passed(), "{:?}", report.violations);
    assert_eq!(report.checks, 2);
}

#[test]
fn check_all_reports_every_invariant_and_names_the_violated_one() {
    let h = history()
        .config()
        .decides(at(0), "replica-1", grant(1, 10 * S))
        .decides(at(5 * S), "replica-2", grant(2, 15 * S))
        .build();
    let report = check_all(&h);
    assert_eq!(report.invariants.len(), Check::INVARIANTS.len());
    let violated: Vec<Check> = report.violations().map(|v| v.invariant).collect();
    assert_eq!(violated, [Check::Excl, Check::Expiry]);
    let names: Vec<&str> = report
        .invariants
        .iter()
        .map(|r| r.invariant.name())
        .collect();
    assert_eq!(
        names,
        [
            "TOKEN", "EXCL", "EXPIRY", "FENCE", "LEDGER", "STOP", "LIVE", "SIGNAL", "DEFINITE"
        ]
    );
    assert!(
        report.to_string().contains("EXCL: 2 checks, 1 violation"),
        "{report}"
    );
}

/// A run's verdict line names what it violated and what it expected and did not see, with the
/// exit code of the violation.
#[test]
fn a_run_verdict_names_the_unexpected_violations_and_the_expected_ones_not_seen() {
    use leasesim::check::judge::judge_run;
    let h = history()
        .config()
        .decides(at(0), "replica-1", grant(1, 10 * S))
        .decides(at(5 * S), "replica-2", grant(2, 15 * S))
        .build();
    let verdict = judge_run(&h, &[Check::Ledger]);
    assert_eq!(
        verdict.line,
        "FAIL: EXCL, EXPIRY violated; LEDGER expected violated, but it held"
    );
    assert_eq!(verdict.exit.code(), 1);
    let expected_seen = judge_run(&h, &[Check::Excl, Check::Expiry]);
    assert!(
        expected_seen
            .line
            .starts_with("clean: violated as expected: EXCL, EXPIRY"),
        "{}",
        expected_seen.line
    );
}

/// A history the linearizability checks cannot read as operations (two op lines with one
/// id) is inconclusive, and the verdict line says so per check, not "ran out of budget".
#[test]
fn an_unreadable_history_is_inconclusive_saying_why() {
    use leasesim::check::judge::judge_run;
    let h = history()
        .config()
        .op(1, "replica-1", span(0, 10), acquire(), granted(1, 10 * S))
        .op(1, "replica-2", span(20, 30), acquire(), held(1))
        .build_unvalidated();
    let verdict = judge_run(&h, &[]);
    assert_eq!(verdict.exit.code(), 4, "{}", verdict.line);
    assert!(
        verdict
            .line
            .starts_with("inconclusive: LIN-LEASE: cannot read the history: "),
        "{}",
        verdict.line
    );
    assert!(!verdict.line.contains("budget"), "{}", verdict.line);
}

// LIVE

/// Healed at 30 s; replica-2 is refused s1 (held with token 1) at `refused_at_us`; replica-1
/// appends event 1 (op 1) completing at `appended_at_us`; the run ends at 60 s.
fn refused_then_appended(refused_at_us: u64, appended_at_us: u64) -> History {
    history()
        .config()
        .healed_at(30 * S)
        .op(
            2,
            "replica-2",
            span(refused_at_us, refused_at_us + 1000),
            acquire(),
            held(1),
        )
        .op(
            1,
            "replica-1",
            span(appended_at_us - 1000, appended_at_us),
            journal_append(1),
            appended(1),
        )
        .run_ended_at(60 * S)
        .build()
}

#[test]
fn live_no_append_after_the_heal_within_the_bound_is_caught() {
    // Bound: 10 s TTL + 3 × 3.333333 s + 2 s backoff = 21.999999 s after the heal at 30 s.
    // replica-2 is still refused s1 at 45 s, after every lease from before the heal at 30 s
    // ran out (30 + 10 + 3.33 s): held by a token-1 holder that no longer writes.
    let report = live::check(&refused_then_appended(45 * S, 53 * S));
    assert_eq!(one(&report).invariant, Check::Live);
    assert!(one(&report).message.contains("s1"));
    // The evidence is the acquire turned away, as the other checks name op lines.
    assert_eq!(one(&report).evidence, vec![Evidence::Op(2)]);
}

/// replica-2 is refused s1 at 44 s; the live holder replica-1 releases it at 46 s.
fn handed_back_at_46_s(then: Option<(&str, u64, u64)>) -> History {
    let mut h = history()
        .config()
        .healed_at(30 * S)
        .op(
            2,
            "replica-2",
            span(44 * S, 44 * S + 1000),
            acquire(),
            held(1),
        )
        .decides(at(44 * S), "replica-2", refuse_acquire(held_by(1)))
        .decides(at(46 * S), "replica-1", release_ended(1));
    if let Some((replica, holder_token, at_us)) = then {
        h = h.decides(at(at_us), replica, refuse_acquire(held_by(holder_token)));
    }
    h.run_ended_at(60 * S).build()
}

#[test]
fn live_passes_a_session_its_live_holder_hands_back_with_nobody_turned_away_after() {
    let report = live::check(&handed_back_at_46_s(None));
    assert!(report.passed(), "{:?}", report.violations);
    assert_eq!(report.checks, 1);
}

#[test]
fn live_catches_a_session_that_turns_acquirers_away_after_it_was_handed_back() {
    // A zombie took s1 again after the release: replica-3 is refused at 50 s.
    let report = live::check(&handed_back_at_46_s(Some(("replica-3", 2, 50 * S))));
    assert_eq!(one(&report).invariant, Check::Live);
    assert!(one(&report).message.contains("s1"));
}

#[test]
fn live_does_not_judge_a_session_nobody_is_turned_away_from_late() {
    // replica-2 is refused s1 at 31 s, while the old lease is still running out, and then
    // leaves it alone: the session is not stuck, nobody wanted it again.
    let report = live::check(&refused_then_appended(31 * S, 53 * S));
    assert!(report.passed(), "{:?}", report.violations);
    assert_eq!(report.checks, 0);
}

#[test]
fn live_append_within_the_bound_passes() {
    // replica-2 is turned away late (45 s) while replica-1 holds s1 and writes (48 s).
    let report = live::check(&refused_then_appended(45 * S, 48 * S));
    assert!(report.passed(), "{:?}", report.violations);
    assert_eq!(report.checks, 1);
}

#[test]
fn live_is_inconclusive_when_the_run_ends_before_the_bound() {
    let h = history()
        .config()
        .healed_at(40 * S)
        .run_ended_at(60 * S)
        .build();
    let report = live::check(&h);
    assert!(report.passed(), "{:?}", report.violations);
    assert_eq!(report.checks, 0);
}

// NOT JUDGED

/// A history of ledger calls only: a backend that records no authority decisions, no lease
/// calls, no validity checks and no heal marker.
fn ledger_only_history() -> History {
    fence_then_event_acknowledged()
        .config()
        .ledger(1, fence_record(1, "replica-1"))
        .ledger(2, event_record("replica-1", 1))
        .build()
}

#[test]
fn checks_with_nothing_to_judge_say_not_judged_never_pass() {
    use leasesim::check::judge::{Status, judge};
    use leasesim::check::linearizability::Budget;
    let judgement = judge(&ledger_only_history(), Budget::default());
    assert_eq!(
        judgement.not_judged(),
        [
            Check::Token,
            Check::Excl,
            Check::Expiry,
            Check::Stop,
            Check::Live,
            Check::Signal,
            Check::Definite,
            Check::LinLease
        ]
    );
    let statuses = judgement.statuses();
    let status = |check: Check| {
        statuses
            .iter()
            .find(|(c, _)| *c == check)
            .unwrap()
            .1
            .clone()
    };
    assert_eq!(
        status(Check::Excl),
        Status::NotJudged {
            why: "no grant, renew or release decision lines".into()
        }
    );
    assert_eq!(
        status(Check::LinLease),
        Status::NotJudged {
            why: "no lease operations".into()
        }
    );
    // What the history has is judged, and passes.
    for check in [Check::Fence, Check::Ledger, Check::LinLedger] {
        assert_eq!(status(check), Status::Pass, "{check}");
    }
    // Not judged does not change the exit code by itself.
    assert_eq!(judgement.exit_code(), leasesim::exit::Exit::Clean);
    let text = judgement.to_string();
    for line in [
        "EXCL: not judged (no grant, renew or release decision lines)",
        "EXPIRY: not judged (no decision lines)",
        "LIN-LEASE: not judged (no lease operations)",
        "FENCE: 2 checks, 0 violations",
        "LIN-LEDGER: linearizable",
    ] {
        assert!(
            text.lines().any(|l| l == line),
            "missing {line:?} in:\n{text}"
        );
    }
}

// LIVE: the grace rule

/// An acquire refused for the grace period, with `remaining_us` left.
fn refuse_for_grace(remaining_us: u64) -> leasesim::history::Decision {
    leasesim::history::Decision::Refuse {
        request: leasesim::history::Request::Acquire,
        token: None,
        reason: leasesim::history::Refusal::GracePeriod {
            remaining_authority_us: remaining_us,
        },
    }
}

/// replica-1 granted s1 at 1 s; the lease service restarts at 3, 7 and 11 s, each time down
/// for 1 s (3 s of uptime a boot); replica-2 is refused for the grace period at `refused_at`
/// (1 s into the boot of 12 s, authority reading 1 s).
fn grant_then_restarts(refused_at: u64) -> History {
    let mut h =
        history()
            .config()
            .lease_clock(boot(0))
            .decides(at(S), "replica-1", grant(1, 11 * S));
    for (n, down) in [3, 7, 11].into_iter().enumerate() {
        let n = n as u64;
        h = h
            .lease_clock(
                boot(n)
                    .from(down * S)
                    .reads(down * S - 4 * S * n)
                    .suspended(),
            )
            .lease_clock(boot(n + 1).from(down * S + S));
    }
    h.decides(
        reading(refused_at - 12 * S, refused_at),
        "replica-2",
        refuse_for_grace(S),
    )
    .build()
}

#[test]
fn live_a_grace_refusal_after_a_ttl_of_uptime_since_the_newest_grant_is_caught() {
    // The bound: the TTL (10 s) + 1 s for each of the 3 restarts since the grant = 13 s of
    // uptime. At 15 s the authority has been up 2 + 3 + 3 + 3 = 11 s since the grant at 1 s
    // (its down seconds left out): a grant may still be live, the refusal is right.
    assert!(live::check(&grant_then_restarts(15 * S)).passed());
    // At 17.5 s: 2 + 3 + 3 + 5.5 = 13.5 s of uptime, past the bound.
    let report = live::check(&grant_then_restarts(17 * S + S / 2));
    let violation = one(&report);
    assert_eq!(violation.invariant, Check::Live);
    assert_eq!(
        violation.evidence,
        [decided("replica-2", 5 * S + S / 2, 17 * S + S / 2)]
    );
    assert!(
        violation.message.contains("13.500 s of authority uptime")
            && violation.message.contains("3 restarts"),
        "{}",
        violation.message
    );
}

#[test]
fn live_downtime_counts_as_zero_for_the_grace_rule() {
    // One crash at 3 s, down until 10 s: a refusal at 17 s comes 16 s after the grant in
    // true time but after 2 + 7 = 9 s of uptime, within 10 s + 1 s for the restart.
    let clean = history()
        .config()
        .lease_clock(boot(0))
        .decides(at(S), "replica-1", grant(1, 11 * S))
        .lease_clock(boot(0).from(3 * S).reads(3 * S).suspended())
        .lease_clock(boot(1).from(10 * S))
        .decides(reading(7 * S, 17 * S), "replica-2", refuse_for_grace(S))
        .build();
    assert!(live::check(&clean).passed(), "{:?}", live::check(&clean));
}
