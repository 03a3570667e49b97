//! Hand-built KubeLease histories (`authority: null`, no decision lines): for each rule of a
//! backend without an authority clock one history that violates it, caught with the right
//! evidence, and a clean one that passes (scenarios K1 and K2, and the kube mutants' races).

use leasesim::check::Check as Named;
use leasesim::check::invariants::{
    Evidence, InvariantReport, Violation, excl, expiry, live, token,
};
use leasesim::check::judge::{Status, judge};
use leasesim::check::linearizability::Budget;
use leasesim::history::{Process, WriteVerb};

use super::build::{
    Answer, Builder, Call, S, accepted_write, acquire, boot, created, deleted, granted, held,
    history, kube_conflict, kube_create, kube_get, kube_object, kube_unavailable, kube_update, p,
    release_lease, released, renew_lease, span, unavailable, updated,
};

/// The one violation of `report`.
fn one(report: &InvariantReport) -> &Violation {
    assert_eq!(report.violations.len(), 1, "{:?}", report.violations);
    &report.violations[0]
}

/// K1's start: replica-1 creates s1 (transitions 1), renews at 3 s, and crashes.
fn k1_start() -> Builder {
    history()
        .kube_config()
        .accepted(0, created("replica-1#0", 1, 1))
        .accepted(3 * S, updated("replica-1#0", 1, 2))
}

#[test]
fn token_passes_k1_with_one_winner() {
    let h = k1_start()
        .accepted(13 * S, updated("replica-2#0", 2, 3))
        .build();
    let report = token::check(&h);
    assert!(report.passed(), "{report:?}");
    assert_eq!(report.checks, 3);
}

#[test]
fn token_catches_k1_unconditional_update_two_holders_one_transitions_value() {
    let h = k1_start()
        .accepted(13 * S, updated("replica-2#0", 2, 3))
        .accepted(13 * S + 1_000, updated("replica-3#0", 2, 4))
        .build();
    let report = token::check(&h);
    let violation = one(&report);
    assert!(
        violation.message.contains("kept leaseTransitions 2"),
        "{violation}"
    );
    assert_eq!(
        violation.evidence,
        vec![
            accepted_write(WriteVerb::Update, "replica-2#0", 2, 3, 13 * S),
            accepted_write(WriteVerb::Update, "replica-3#0", 2, 4, 13 * S + 1_000),
        ]
    );
}

#[test]
fn token_passes_k2_release_keeps_the_object() {
    let h = history()
        .kube_config()
        .accepted(0, created("replica-1#0", 3, 1))
        .accepted(5 * S, updated("", 3, 2))
        .accepted(6 * S, updated("replica-2#0", 4, 3))
        .build();
    let report = token::check(&h);
    assert!(report.passed(), "{report:?}");
    assert_eq!(report.checks, 3);
}

#[test]
fn token_catches_k2_delete_on_release_resetting_transitions() {
    let h = history()
        .kube_config()
        .accepted(0, created("replica-1#0", 3, 1))
        .accepted(5 * S, deleted(3, 1))
        .accepted(6 * S, created("replica-2#0", 1, 2))
        .build();
    let report = token::check(&h);
    let violation = one(&report);
    assert!(
        violation.message.contains("went down from 3 to 1"),
        "{violation}"
    );
    assert_eq!(
        violation.evidence,
        vec![
            accepted_write(WriteVerb::Create, "replica-1#0", 3, 1, 0),
            accepted_write(WriteVerb::Create, "replica-2#0", 1, 2, 6 * S),
        ]
    );
}

#[test]
fn token_catches_a_renew_that_bumps_the_token() {
    let h = history()
        .kube_config()
        .op(
            1,
            "replica-1",
            span(0, 10_000),
            acquire(),
            granted(1, 10 * S),
        )
        .op(
            2,
            "replica-1",
            span(3 * S, 3 * S + 10_000),
            renew_lease(1),
            granted(2, 10 * S),
        )
        .build();
    let report = token::check(&h);
    let violation = one(&report);
    assert!(
        violation
            .message
            .contains("presented token 1 and was granted token 2")
    );
    assert_eq!(violation.evidence, vec![Evidence::Op(2)]);
}

#[test]
fn token_passes_renews_and_a_live_reacquire_that_keep_the_token() {
    let h = history()
        .kube_config()
        .op(
            1,
            "replica-1",
            span(0, 10_000),
            acquire(),
            granted(1, 10 * S),
        )
        .op(
            2,
            "replica-1",
            span(3 * S, 3 * S + 10_000),
            renew_lease(1),
            granted(1, 10 * S),
        )
        .op(
            3,
            "replica-1",
            span(5 * S, 5 * S + 10_000),
            acquire(),
            granted(1, 10 * S),
        )
        .build();
    let report = token::check(&h);
    assert!(report.passed(), "{report:?}");
    // The renew, and the re-acquire inside the renew's window.
    assert_eq!(report.checks, 2);
}

#[test]
fn token_catches_a_live_reacquire_that_changes_the_token() {
    let h = history()
        .kube_config()
        .op(
            1,
            "replica-1",
            span(0, 10_000),
            acquire(),
            granted(1, 10 * S),
        )
        .op(
            2,
            "replica-1",
            span(5 * S, 5 * S + 10_000),
            acquire(),
            granted(2, 10 * S),
        )
        .build();
    let report = token::check(&h);
    let violation = one(&report);
    assert!(
        violation.message.contains("changed its token from 1 to 2"),
        "{violation}"
    );
    assert!(
        violation
            .evidence
            .ends_with(&[Evidence::Op(1), Evidence::Op(2)])
    );
}

/// s1 held by replica-1 (writes at 0 and 3 s), replica-2 takes over at `takeover_us` on a clock
/// running `drift_ppm` fast.
fn takeover(takeover_us: u64, drift_ppm: i64) -> leasesim::history::History {
    k1_start()
        .clock("replica-2", boot(0).drift_ppm(drift_ppm))
        .accepted(takeover_us, updated("replica-2#0", 2, 3))
        .build()
}

#[test]
fn expiry_catches_an_early_takeover_by_a_fast_wall_candidate() {
    // The candidate's wall clock runs ahead, so renewTime + TTL looked past at 8 s: only 5 s
    // of its monotonic clock since the renew it could have seen.
    let report = expiry::check(&takeover(8 * S, 0));
    let violation = one(&report);
    assert!(
        violation.message.contains("advanced only 5.000 s"),
        "{violation}"
    );
    assert_eq!(
        violation.evidence,
        vec![
            accepted_write(WriteVerb::Update, "replica-1#0", 1, 2, 3 * S),
            accepted_write(WriteVerb::Update, "replica-2#0", 2, 3, 8 * S),
        ]
    );
}

#[test]
fn expiry_passes_a_takeover_a_ttl_after_the_last_change_on_the_candidates_clock() {
    // 9.6 s of true time on a clock 5% fast is 10.08 s: a full TTL.
    let report = expiry::check(&takeover(3 * S + 9_600_000, 50_000));
    assert!(report.passed(), "{report:?}");
    assert_eq!(report.checks, 1);
    // On a clock 5% slow the same takeover came early.
    assert_eq!(
        expiry::check(&takeover(3 * S + 9_600_000, -50_000))
            .violations
            .len(),
        1
    );
}

#[test]
fn expiry_does_not_judge_a_takeover_after_a_release() {
    let h = history()
        .kube_config()
        .accepted(0, created("replica-1#0", 1, 1))
        .accepted(S, updated("", 1, 2))
        .accepted(2 * S, updated("replica-2#0", 2, 3))
        .build();
    let report = expiry::check(&h);
    assert!(report.passed());
    assert_eq!(
        report.not_judged().as_deref(),
        Some("no takeover of a held lease among the write lines")
    );
}

/// replica-1 (clock `holder_ppm`) acquires at 0; replica-2 (clock `candidate_ppm`) acquires at
/// true `candidate_us`. TTL 10 s, skew margin 1 s: replica-1's window ends at local 9 s.
fn windows(holder_ppm: i64, candidate_ppm: i64, candidate_us: u64) -> leasesim::history::History {
    windows_granting(10 * S, holder_ppm, candidate_ppm, candidate_us)
}

/// As [`windows`], but replica-1 is granted `holder_ttl_us` (a target adapter grants what is
/// left of a claim, less than the configured 10 s).
fn windows_granting(
    holder_ttl_us: u64,
    holder_ppm: i64,
    candidate_ppm: i64,
    candidate_us: u64,
) -> leasesim::history::History {
    let candidate_local =
        (i128::from(candidate_us) * (1_000_000 + i128::from(candidate_ppm)) / 1_000_000) as u64;
    history()
        .kube_config()
        .clock("replica-1", boot(0).drift_ppm(holder_ppm))
        .clock("replica-2", boot(0).drift_ppm(candidate_ppm))
        .op(
            1,
            "replica-1",
            span(0, 10_000),
            acquire(),
            granted(1, holder_ttl_us),
        )
        .op_reading(
            2,
            "replica-2",
            span(candidate_us, candidate_us + 10_000),
            candidate_local,
            acquire(),
            granted(2, 10 * S),
        )
        .build()
}

fn window(replica: &str, token: u64, op: u64, from_us: u64, until_us: u64) -> Evidence {
    Evidence::Window {
        process: p(replica),
        session: "s1".into(),
        token,
        op,
        from_us,
        until_us,
    }
}

#[test]
fn excl_catches_overlapping_windows_within_the_drift_bound() {
    // A −5% holder's 9 s of validity last 9.473685 s; the +5% candidate got in at 9 s.
    let report = excl::check(&windows(-50_000, 50_000, 9 * S));
    let violation = one(&report);
    assert!(
        violation
            .message
            .contains("overlap from 9.010 s to 9.473685 s"),
        "{violation}"
    );
    assert_eq!(
        violation.evidence,
        vec![
            window("replica-1", 1, 1, 10_000, 9_473_685),
            Evidence::Op(1),
            window("replica-2", 2, 2, 9 * S + 10_000, 17_571_429),
            Evidence::Op(2),
        ]
    );
}

/// A grant that arrives after its own deadline (the call was held up longer than the TTL
/// less the margin) gives its holder no validity at all: an empty window, which overlaps
/// nobody's. replica-2's acquire, sent at 0, is answered at 9.5 s, past its deadline at 9 s,
/// inside replica-1's window (found on the engine, `kube-swarm-long-holds` seed 1001: a renew
/// held 17.8 s).
#[test]
fn excl_passes_a_grant_that_arrives_after_its_own_deadline_inside_another_window() {
    let h = history()
        .kube_config()
        .op(
            1,
            "replica-2",
            span(0, 9 * S + 500_000),
            acquire(),
            granted(1, 10 * S),
        )
        .op(
            2,
            "replica-1",
            span(5 * S, 5 * S + 10_000),
            acquire(),
            granted(2, 10 * S),
        )
        .build();
    let report = excl::check(&h);
    assert!(report.passed(), "{report:?}");
    assert_eq!(report.checks, 1);
}

#[test]
fn excl_passes_a_takeover_after_the_holders_window() {
    let report = excl::check(&windows(-50_000, 50_000, 10 * S));
    assert!(report.passed(), "{report:?}");
    assert_eq!(report.checks, 1);
}

#[test]
fn excl_does_not_judge_an_overlap_outside_the_drift_bound() {
    // A −9% holder and a +9% candidate overlap by design: not judged, never pass.
    let report = excl::check(&windows(-90_000, 90_000, 9 * S));
    assert!(report.passed(), "{report:?}");
    assert_eq!(report.checks, 0);
    let why = report.not_judged().expect("not judged");
    assert!(why.contains("1 overlapping pairs"), "{why}");
}

#[test]
fn excl_ends_a_short_grants_window_at_the_same_fraction_of_its_ttl_as_margin() {
    // A 4 s grant under a config of 1 s in 10 s: margin 0.4 s, the window ends at 3.6 s (not
    // 4 s − 1 s = 3 s), so a candidate granted at 3.51 s overlaps it.
    let report = excl::check(&windows_granting(4 * S, 0, 0, 3 * S + 500_000));
    let violation = one(&report);
    assert_eq!(
        violation.evidence,
        vec![
            window("replica-1", 1, 1, 10_000, 3_600_000),
            Evidence::Op(1),
            window("replica-2", 2, 2, 3_510_000, 12_500_000),
            Evidence::Op(2),
        ]
    );
    assert!(
        violation
            .message
            .contains("bound 100000ppm (skew margin 0.400 s of TTL 4.000 s)"),
        "{violation}"
    );

    let report = excl::check(&windows_granting(4 * S, 0, 0, 3 * S + 600_000));
    assert!(report.passed(), "{report:?}");
    assert_eq!(report.checks, 1);
}

#[test]
fn excl_bounds_a_short_grants_drift_by_the_configs_fraction_not_by_its_fixed_margin() {
    // −6 % and +6 % is 120 000 ppm, beyond 10 % of any TTL (1 s of a 4 s grant would be 25 %):
    // not judged, never pass.
    let report = excl::check(&windows_granting(4 * S, -60_000, 60_000, 3 * S + 500_000));
    assert!(report.passed(), "{report:?}");
    assert_eq!(report.checks, 0);
    let why = report.not_judged().expect("not judged");
    assert!(why.contains("1 overlapping pairs"), "{why}");
}

#[test]
fn excl_cuts_a_window_at_its_holders_release() {
    let h = history()
        .kube_config()
        .op(
            1,
            "replica-1",
            span(0, 10_000),
            acquire(),
            granted(1, 10 * S),
        )
        .op(
            2,
            "replica-1",
            span(2 * S, 2 * S + 10_000),
            release_lease(1),
            released(),
        )
        .op(
            3,
            "replica-2",
            span(3 * S, 3 * S + 10_000),
            acquire(),
            granted(2, 10 * S),
        )
        .build();
    let report = excl::check(&h);
    assert!(report.passed(), "{report:?}");
    assert_eq!(report.checks, 1);
}

/// A KubeLease acquire is a series of reads and updates: under held replies it can start
/// before the last holder's release and get its grant (the update that wins) after it. The
/// window starts when the grant arrives, so this is one holder after the other, not an overlap
/// (`sims/regressions/kube-swarm-delays-seed7.run.json` is the run that showed it).
#[test]
fn excl_starts_a_window_when_its_grant_arrives_not_when_the_acquire_began() {
    let h = history()
        .kube_config()
        .op(
            1,
            "replica-1",
            span(0, 10_000),
            acquire(),
            granted(1, 10 * S),
        )
        .op(
            2,
            "replica-2",
            span(2 * S, 4 * S),
            acquire(),
            granted(2, 10 * S),
        )
        .op(
            3,
            "replica-1",
            span(3 * S, 3 * S + 10_000),
            release_lease(1),
            released(),
        )
        .build();
    let report = excl::check(&h);
    assert!(report.passed(), "{report:?}");
    assert_eq!(report.checks, 1);
}

/// The Lease API calls of three replicas on s1.
fn kube_calls() -> Builder {
    history().kube_config().op(
        1,
        "replica-1",
        span(0, S),
        kube_create("replica-1#0", 1),
        kube_object(1, "replica-1#0", 1),
    )
}

#[test]
fn lin_lease_catches_a_stale_resource_version_update_that_returned_ok() {
    let h = kube_calls()
        .op(
            2,
            "replica-2",
            span(2 * S, 3 * S),
            kube_update(Some(1), "replica-2#0", 2),
            kube_object(2, "replica-2#0", 2),
        )
        .op(
            3,
            "replica-3",
            span(4 * S, 5 * S),
            kube_update(Some(1), "replica-3#0", 2),
            kube_object(3, "replica-3#0", 2),
        )
        .build();
    let judgement = judge(&h, Budget::default());
    let statuses = judgement.statuses();
    assert!(
        statuses.contains(&(Named::LinLease, Status::Fail)),
        "{judgement}"
    );
    let text = judgement.to_string();
    assert!(text.contains("LIN-LEASE: not linearizable"), "{text}");
    assert!(
        text.contains("updated s1 at rv 1 (holder \"replica-3#0\""),
        "{text}"
    );
}

#[test]
fn lin_lease_passes_a_correct_interleaving_with_unknown_outcomes() {
    // replica-2's update gets a 503 but was applied: replica-3's update from the same read
    // conflicts, and the final get shows replica-2's write.
    let h = kube_calls()
        .op(
            2,
            "replica-2",
            span(2 * S, 3 * S),
            kube_update(Some(1), "replica-2#0", 2),
            kube_unavailable(),
        )
        .op(
            3,
            "replica-3",
            span(4 * S, 5 * S),
            kube_update(Some(1), "replica-3#0", 2),
            kube_conflict(),
        )
        .op(
            4,
            "replica-3",
            span(6 * S, 7 * S),
            kube_get(),
            kube_object(2, "replica-2#0", 2),
        )
        .build();
    let judgement = judge(&h, Budget::default());
    let text = judgement.to_string();
    assert!(text.contains("LIN-LEASE: linearizable"), "{text}");
    assert!(
        text.contains("LIN-LEDGER: not judged (no ledger or journal operations)"),
        "{text}"
    );
}

#[test]
fn a_kube_history_without_anything_to_judge_says_not_judged_per_check() {
    let h = history().kube_config().build();
    let text = judge(&h, Budget::default()).to_string();
    for line in [
        "TOKEN: not judged (no write lines and no successful renew or re-acquire)",
        "EXCL: not judged (no decision lines, and no two owners' validity windows for one session)",
        "EXPIRY: not judged (no takeover of a held lease among the write lines)",
        "LIN-LEASE: not judged (no kube operations)",
    ] {
        assert!(text.contains(line), "{line} in\n{text}");
    }
}

#[test]
fn holder_identities_name_replica_and_incarnation() {
    use leasesim::check::invariants::holders::parse_holder;
    assert_eq!(
        parse_holder("replica-2#1"),
        Some(Process::new("replica-2", 1))
    );
    assert_eq!(parse_holder(""), None);
    assert_eq!(parse_holder("replica-2"), None);
    assert_eq!(parse_holder("node-2#1"), None);
    assert_eq!(parse_holder("replica-#1"), None);
}

/// Faults healed at 0 and the run ended at 30 s; the API server restarted at 5 s; replica-2
/// looks at the object at 1 s and is turned away again at 20.5 s, having watched it unchanged
/// for longer than a TTL and a renew interval. The kube bound is 10 s TTL + 3 × 3.333333 s +
/// 2 s = 21.999999 s, with no grace: a restarted API server judges no expiry.
fn turned_away_late() -> Builder {
    look(first_look_late(), 3, S, 3)
}

/// As [`turned_away_late`] without the look at 1 s: replica-2's first look at the object is
/// at 20.5 s.
fn first_look_late() -> Builder {
    let h = history()
        .kube_config()
        .clock("apiserver", boot(0))
        .clock("apiserver", boot(1).from(5 * S))
        .healed_at(0);
    look(h, 1, 20_500_000, 3).run_ended_at(30 * S)
}

/// Ops `id` and `id + 1`: replica-2's acquire at `at_us`, answered held, and its read, which
/// brought back replica-1's object at resourceVersion `rv`.
fn look(h: Builder, id: u64, at_us: u64, rv: u64) -> Builder {
    h.op(
        id,
        "replica-2",
        span(at_us, at_us + 10_000),
        acquire(),
        held(1),
    )
    .op(
        id + 1,
        "replica-2",
        span(at_us, at_us + 5_000),
        kube_get(),
        kube_object(rv, "replica-1#0", 1),
    )
}

/// A candidate counts `leaseDurationSeconds` from its own first look (client-go's rule): one
/// that first looks at 20.5 s is rightly refused until 30.5 s, which says nothing about the
/// session being stuck (kube-swarm-deletion seed 11 was this false alarm).
#[test]
fn live_does_not_judge_a_refusal_on_a_candidates_first_look() {
    let report = live::check(&first_look_late().build());
    assert!(report.passed(), "{report:?}");
    assert_eq!(report.checks, 0);
}

/// A write to the object restarts every candidate's count: a look before it does not make a
/// refusal after it judged. Nor does a read that never reached the API server.
#[test]
fn live_counts_a_candidates_look_from_the_objects_last_write() {
    // Healed at 5 s; replica-1's last renew at 2 s, after replica-2's look at 1 s.
    let renewed = look(history().kube_config().healed_at(5 * S), 1, S, 3)
        .accepted(2 * S, updated("replica-1#0", 1, 4));
    let rewritten = look(renewed, 3, 20_500_000, 4).run_ended_at(30 * S).build();
    assert_eq!(live::check(&rewritten).checks, 0);
    let unreached = first_look_late()
        .op(
            3,
            "replica-2",
            span(S, S + 10_000),
            acquire(),
            kube_unavailable(),
        )
        .op(
            4,
            "replica-2",
            span(S, S + 5_000),
            kube_get(),
            kube_unavailable(),
        )
        .build();
    assert_eq!(live::check(&unreached).checks, 0);
}

/// A holder still writing the object after the heal (renewing without appending: a zombie)
/// keeps the session stuck however late a candidate first looks: the refusal counts at once
/// (the `renewer-outlives-worker` mutant on kube-swarm-clocks).
#[test]
fn live_catches_a_holder_that_renews_after_the_heal_without_appending() {
    let h = first_look_late()
        .accepted(10 * S, updated("replica-1#0", 1, 4))
        .build();
    let violation = one(&live::check(&h)).clone();
    assert!(
        violation.message.contains("no acknowledged journal append"),
        "{violation}"
    );
}

#[test]
fn live_catches_a_session_stuck_past_the_bound_without_a_grace_for_an_api_server_restart() {
    let report = live::check(&turned_away_late().build());
    let violation = one(&report);
    assert!(
        violation.message.contains(
            "between the heal at 0.000 s (the first candidate to watch its object long enough \
             looked at 1.005 s) and 23.004999 s (bound 21.999999 s)"
        ),
        "{violation}"
    );
}

/// `replica` (an incarnation: `replica-2#1`) looks at s1's object, still replica-1#0's
/// (resourceVersion 1), at `at_us` and is turned away; ops `id` and `id + 1`.
fn refused_look(h: Builder, id: u64, replica: &str, at_us: u64) -> Builder {
    h.op(
        id,
        replica,
        span(at_us, at_us + 5_000),
        kube_get(),
        kube_object(1, "replica-1#0", 1),
    )
    .op(
        id + 1,
        replica,
        span(at_us, at_us + 10_000),
        acquire(),
        held(1),
    )
}

/// kube-swarm-slow-holders seed 2080 in small: replica-1#0 created s1 and died; after the
/// heal at 8 s replica-2 restarts every 7–9 s, so no incarnation watches the object for a TTL
/// and a renew interval (13.3 s) until replica-2#2, first looking at 24.1 s, takes it over at
/// 28.2 s, and replica-3 is turned away by the new holder before the run ends at 30 s. A
/// candidate's count is its incarnation's (a restart forgets it): nothing could take s1 over
/// sooner, and no incarnation watched long enough to judge the session by.
#[test]
fn live_does_not_judge_a_session_while_every_candidate_restarts_before_watching_a_ttl() {
    let mut h = history()
        .kube_config()
        .accepted(0, created("replica-1#0", 1, 1))
        .healed_at(8 * S);
    let mut id = 1;
    for (replica, looks) in [
        ("replica-2#0", [8_100_000, 12 * S, 15 * S]),
        ("replica-2#1", [15_100_000, 20 * S, 24 * S]),
        ("replica-2#2", [24_100_000, 26 * S, 28 * S]),
    ] {
        for at_us in looks {
            h = refused_look(h, id, replica, at_us);
            id += 2;
        }
    }
    h = h.accepted(28_200_000, updated("replica-2#2", 2, 2));
    for at_us in [28_300_000, 29 * S, 29_900_000] {
        h = h
            .op(
                id,
                "replica-3",
                span(at_us, at_us + 5_000),
                kube_get(),
                kube_object(2, "replica-2#2", 2),
            )
            .op(
                id + 1,
                "replica-3",
                span(at_us, at_us + 10_000),
                acquire(),
                held(2),
            );
        id += 2;
    }
    let report = live::check(&h.run_ended_at(30 * S).build());
    assert!(report.passed(), "{report:?}");
    assert_eq!(report.checks, 0);
}

/// The same dead holder, and one incarnation that stays: replica-2#1 watches the object from
/// 15.105 s on and is still turned away at 30 and 35 s, with no takeover and no append by
/// 15.105 s + the bound: a violation, the bound counted from its first look.
#[test]
fn live_catches_a_dead_holders_session_a_candidate_watched_for_a_ttl_without_taking_over() {
    let mut h = history()
        .kube_config()
        .accepted(0, created("replica-1#0", 1, 1))
        .healed_at(8 * S);
    let mut id = 1;
    for at_us in [8_100_000, 12 * S] {
        h = refused_look(h, id, "replica-2#0", at_us);
        id += 2;
    }
    for at_us in [15_100_000, 20 * S, 25 * S, 30 * S, 35 * S] {
        h = refused_look(h, id, "replica-2#1", at_us);
        id += 2;
    }
    let report = live::check(&h.run_ended_at(40 * S).build());
    let violation = one(&report);
    assert!(
        violation.message.contains(
            "between the heal at 8.000 s (the first candidate to watch its object long enough \
             looked at 15.105 s) and 37.104999 s"
        ),
        "{violation}"
    );
}

#[test]
fn live_passes_a_session_handed_back_by_a_release_write() {
    let report = live::check(
        &turned_away_late()
            .accepted(21 * S, updated("", 1, 4))
            .build(),
    );
    assert!(report.passed(), "{report:?}");
    assert_eq!(report.checks, 1);
}

/// replica-1 acquires at 0 (window to 9 s); replica-2 acquires at 3 s; replica-1's host
/// restarts (boot 1) at `restart_us`.
fn crash_then_takeover(restart_us: u64) -> leasesim::history::History {
    history()
        .kube_config()
        .clock("replica-1", boot(0))
        .clock("replica-1", boot(1).from(restart_us).reads(restart_us))
        .op(
            1,
            "replica-1",
            span(0, 10_000),
            acquire(),
            granted(1, 10 * S),
        )
        .op(
            2,
            "replica-2",
            span(3 * S, 3 * S + 10_000),
            acquire(),
            granted(2, 10 * S),
        )
        .build()
}

#[test]
fn excl_cuts_a_window_at_its_holders_crash() {
    let report = excl::check(&crash_then_takeover(2 * S));
    assert!(report.passed(), "{report:?}");
    assert_eq!(report.checks, 1);
    // Had replica-1 lived on to 4 s, its window would still be open at 3 s.
    let report = excl::check(&crash_then_takeover(4 * S));
    let violation = one(&report);
    assert!(
        violation.message.contains("cut by its crash"),
        "{violation}"
    );
    assert_eq!(
        violation.evidence[0],
        window("replica-1", 1, 1, 10_000, 4 * S)
    );
}

#[test]
fn excl_cuts_a_window_at_a_renew_answered_held() {
    let h = history()
        .kube_config()
        .op(
            1,
            "replica-1",
            span(0, 10_000),
            acquire(),
            granted(1, 10 * S),
        )
        .op(
            2,
            "replica-1",
            span(2 * S, 2 * S + 10_000),
            renew_lease(1),
            held(2),
        )
        .op(
            3,
            "replica-2",
            span(3 * S, 3 * S + 10_000),
            acquire(),
            granted(2, 10 * S),
        )
        .build();
    let report = excl::check(&h);
    assert!(report.passed(), "{report:?}");
    assert_eq!(report.checks, 1);
}

/// replica-1 creates s1 (rv 1); replica-2's update from rv 1 gets a 503 at [2 s, 3 s];
/// replica-3 then reads the object as `read`. With `accepted`, the API server's write lines
/// show the update applied (rv 2 at 2.5 s).
fn unknown_update(read: (u64, &str, u64), accepted: bool) -> leasesim::history::History {
    let mut h = kube_calls()
        .accepted(500_000, created("replica-1#0", 1, 1))
        .op(
            2,
            "replica-2",
            span(2 * S, 3 * S),
            kube_update(Some(1), "replica-2#0", 2),
            kube_unavailable(),
        )
        .op(
            3,
            "replica-3",
            span(4 * S, 5 * S),
            kube_get(),
            kube_object(read.0, read.1, read.2),
        );
    if accepted {
        h = h.accepted(2_500_000, updated("replica-2#0", 2, 2));
    }
    h.build()
}

#[test]
fn lin_lease_resolves_an_unknown_update_from_the_write_lines() {
    use leasesim::check::linearizability::{Verdict, check_kube_history, kube_operations};
    let h = unknown_update((2, "replica-2#0", 2), true);
    let ops = kube_operations(&h).unwrap();
    assert_eq!((ops.resolved, ops.dropped, ops.unknown), (1, 0, 0));
    assert_eq!(
        check_kube_history(&h, Budget::default()).unwrap(),
        Verdict::Linearizable
    );
    // The write lines show it applied, so a later read of the old object is stale...
    let stale = unknown_update((1, "replica-1#0", 1), true);
    assert!(matches!(
        check_kube_history(&stale, Budget::default()).unwrap(),
        Verdict::NotLinearizable(_)
    ));
}

#[test]
fn lin_lease_drops_an_unknown_update_no_write_line_shows() {
    use leasesim::check::linearizability::{Verdict, check_kube_history, kube_operations};
    // The server accepted only the create: the update never took effect, so reading
    // replica-2's object would be impossible, and reading the create's object is right.
    let h = unknown_update((1, "replica-1#0", 1), false);
    let ops = kube_operations(&h).unwrap();
    assert_eq!((ops.resolved, ops.dropped, ops.unknown), (0, 1, 0));
    assert_eq!(
        check_kube_history(&h, Budget::default()).unwrap(),
        Verdict::Linearizable
    );
    let impossible = unknown_update((2, "replica-2#0", 2), false);
    assert!(matches!(
        check_kube_history(&impossible, Budget::default()).unwrap(),
        Verdict::NotLinearizable(_)
    ));
}

#[test]
fn excl_cuts_older_windows_at_a_release_of_a_higher_token_and_not_at_a_stale_one() {
    // A renew that moved the token (TOKEN's business): releasing the new value ends the old
    // one's window too.
    let moved = history()
        .kube_config()
        .op(
            1,
            "replica-1",
            span(0, 10_000),
            acquire(),
            granted(1, 10 * S),
        )
        .op(
            2,
            "replica-1",
            span(S, S + 10_000),
            renew_lease(1),
            granted(2, 10 * S),
        )
        .op(
            3,
            "replica-1",
            span(2 * S, 2 * S + 10_000),
            release_lease(2),
            released(),
        )
        .op(
            4,
            "replica-2",
            span(3 * S, 3 * S + 10_000),
            acquire(),
            granted(3, 10 * S),
        )
        .build();
    let report = excl::check(&moved);
    assert!(report.passed(), "{report:?}");
    assert_eq!(report.checks, 1);
    // A release of an older token ends nothing of the lease held now.
    let stale = history()
        .kube_config()
        .op(
            1,
            "replica-1",
            span(0, 10_000),
            acquire(),
            granted(3, 10 * S),
        )
        .op(
            2,
            "replica-1",
            span(S, S + 10_000),
            release_lease(1),
            released(),
        )
        .op(
            3,
            "replica-2",
            span(3 * S, 3 * S + 10_000),
            acquire(),
            granted(4, 10 * S),
        )
        .build();
    let report = excl::check(&stale);
    assert_eq!(
        one(&report).evidence[0],
        window("replica-1", 3, 1, 10_000, 9 * S)
    );
}

/// replica-1 creates s1 (op 1, done at 10 ms, transitions 1), and then, from op 2 on its clock
/// at `second_us`, an `answer`ed `call` that writes s1 again keeping holder and transitions.
fn kept_after(second_us: u64, call: Call, first: Answer) -> Builder {
    history()
        .kube_config()
        .op(1, "replica-1", span(0, 10_000), acquire(), first)
        .accepted(5_000, created("replica-1#0", 1, 1))
        .op(
            2,
            "replica-1",
            span(second_us, second_us + 10_000),
            call,
            granted(1, 10 * S),
        )
        .accepted(second_us + 5_000, updated("replica-1#0", 1, 2))
}

#[test]
fn token_catches_a_same_owner_takeover_after_its_own_expiry_that_keeps_transitions() {
    // replica-1 saw its own write by 10 ms; 20 ms after the TTL (10 s) it acquires again.
    let h = kept_after(10 * S + 20_000, acquire(), granted(1, 10 * S)).build();
    let report = token::check(&h);
    let violation = one(&report);
    assert!(
        violation
            .message
            .contains("replica-1#0 kept leaseTransitions 1 at rv 2"),
        "{violation}"
    );
    assert!(violation.message.contains("must raise it"), "{violation}");
    assert_eq!(
        violation.evidence,
        vec![
            accepted_write(WriteVerb::Create, "replica-1#0", 1, 1, 5_000),
            Evidence::Op(1),
            Evidence::Op(2),
            accepted_write(WriteVerb::Update, "replica-1#0", 1, 2, 10 * S + 25_000),
        ]
    );
}

#[test]
fn token_catches_a_renew_after_its_holders_own_expiry_that_keeps_transitions() {
    let h = kept_after(10 * S + 20_000, renew_lease(1), granted(1, 10 * S)).build();
    let report = token::check(&h);
    assert!(one(&report).message.contains("must raise it"), "{report:?}");
}

#[test]
fn token_passes_a_live_reacquire_and_a_renew_that_keep_transitions_before_the_ttl() {
    for call in [acquire(), renew_lease(1)] {
        // 9.99 s after op 1 completed on replica-1's clock: its lease is still live.
        let h = kept_after(9 * S + 990_000 + 10_000, call, granted(1, 10 * S)).build();
        let report = token::check(&h);
        assert!(report.passed(), "{report:?}");
    }
}

#[test]
fn token_counts_the_ttl_from_when_the_holder_last_saw_its_write_not_from_the_invoke() {
    // Op 1 took 10 ms; 10 s after its invoke but only 9.99 s after its completion is live.
    let h = kept_after(10 * S, acquire(), granted(1, 10 * S)).build();
    assert!(token::check(&h).passed());
}

#[test]
fn token_does_not_judge_a_kept_write_after_a_write_whose_reply_was_lost() {
    // Op 1's outcome is unknown: replica-1 may first have seen rv 1 at op 2's read, from
    // which its count starts (a live re-acquire then keeps the token).
    let h = kept_after(10 * S + 20_000, acquire(), unavailable()).build();
    let report = token::check(&h);
    assert!(report.passed(), "{report:?}");
}
