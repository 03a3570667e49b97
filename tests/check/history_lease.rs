//! The timed lease model on hand-built histories read through `check_lease_history`: expiry is
//! judged on the authority's clock (its clock segments, drift and restarts), tokens, and the
//! resolution of unknown-outcome calls through the authority's decision lines.

use leasesim::check::linearizability::lease::{LeaseCall, LeaseOutput};
use leasesim::check::linearizability::{
    Budget, LeaseOps, Verdict, check_lease_history, lease_operations,
};
use leasesim::history::{
    ClockLine, Decision, DecisionLine, History, Line, Op, OpResult, Outcome, Process, Refusal,
    Request,
};

use crate::support::{op_line, stuck_index};

const S: &str = "s1";
/// The TTL of every grant here: 1 s.
const TTL: u64 = 1_000_000;

fn a() -> Process {
    Process::new("replica-1", 0)
}

fn b() -> Process {
    Process::new("replica-2", 0)
}

/// The authority's clock: one segment of `boot` from true `from_us`, reading `local_from_us`.
fn clock(boot: u64, from_us: u64, local_from_us: u64, drift_ppm: i64, suspended: bool) -> Line {
    Line::Clock(ClockLine {
        host: "lease".into(),
        boot,
        from_us,
        local_from_us,
        drift_ppm,
        suspended,
    })
}

/// A perfect authority clock reading true time.
fn true_clock() -> Line {
    clock(0, 0, 0, 0, false)
}

fn granted(token: u64, expiry_authority_us: u64) -> OpResult {
    OpResult::Granted {
        token,
        expiry_authority_us,
        ttl_us: TTL,
    }
}

/// Op line `id`: `who` calls `op` over `window` and gets `result`, `ok` when granted or
/// released, `info` when unavailable, `fail` otherwise.
fn lease_line(id: u64, who: Process, window: (u64, u64), op: Op, result: OpResult) -> Line {
    let outcome = match result {
        OpResult::Granted { .. } | OpResult::Released {} => Outcome::Ok,
        OpResult::Unavailable { .. } => Outcome::Info,
        _ => Outcome::Fail,
    };
    op_line(id, who, op, window, outcome, result)
}

/// What a call that timed out got.
fn timed_out() -> OpResult {
    OpResult::Unavailable {
        reason: "timeout".into(),
    }
}

/// An acquire by `who` granted `token`, decided at authority reading `at` (expiry `at + TTL`).
fn acquire(id: u64, who: Process, window: (u64, u64), token: u64, at: u64) -> Line {
    acquire_answered(id, who, window, granted(token, at + TTL))
}

fn acquire_held(id: u64, who: Process, window: (u64, u64), holder_token: Option<u64>) -> Line {
    acquire_answered(id, who, window, OpResult::Held { holder_token })
}

fn acquire_unknown(id: u64, who: Process, window: (u64, u64)) -> Line {
    acquire_answered(id, who, window, timed_out())
}

fn acquire_answered(id: u64, who: Process, window: (u64, u64), result: OpResult) -> Line {
    let op = Op::LeaseAcquire { owner: who.clone() };
    lease_line(id, who, window, op, result)
}

fn renew(id: u64, who: Process, token: u64, window: (u64, u64), result: OpResult) -> Line {
    let op = Op::LeaseRenew {
        owner: who.clone(),
        token,
    };
    lease_line(id, who, window, op, result)
}

fn release(id: u64, who: Process, token: u64, window: (u64, u64)) -> Line {
    release_answered(id, who, token, window, OpResult::Released {})
}

fn release_answered(
    id: u64,
    who: Process,
    token: u64,
    window: (u64, u64),
    result: OpResult,
) -> Line {
    let op = Op::LeaseRelease {
        owner: who.clone(),
        token,
    };
    lease_line(id, who, window, op, result)
}

fn grant_decision(who: Process, token: u64, at_authority_us: u64, at_us: u64) -> Line {
    Line::Decision(DecisionLine {
        session: S.into(),
        owner: who,
        decision: Decision::Grant {
            token,
            expiry_authority_us: at_authority_us + TTL,
            ttl_us: TTL,
        },
        at_authority_us,
        at_us,
    })
}

fn verdict(lines: Vec<Line>) -> Verdict {
    check_lease_history(&History::from_lines("hand", lines), Budget::default()).unwrap()
}

/// The lease operations of `lines`, asserting how many unknown-outcome calls were resolved,
/// dropped and left unknown.
fn lease_ops(lines: &[Line], resolved_dropped_unknown: (usize, usize, usize)) -> LeaseOps {
    let ops = lease_operations(&History::from_lines("hand", lines.to_vec())).unwrap();
    let counts = (ops.resolved, ops.dropped, ops.unknown);
    assert_eq!(counts, resolved_dropped_unknown);
    ops
}

/// A true authority clock, A's acquire over 0–0.1 s with an outcome it never learned, then
/// `rest`.
fn after_an_unknown_acquire<const N: usize>(rest: [Line; N]) -> Vec<Line> {
    let mut lines = vec![true_clock(), acquire_unknown(1, a(), (0, 100_000))];
    lines.extend(rest);
    lines
}

/// A true authority clock, A's acquire over 0–10 µs granted token 1 at reading 5 (live until
/// 1.000005 s) and the authority's decision line for it, then `rest`.
fn after_a_is_granted<const N: usize>(rest: [Line; N]) -> Vec<Line> {
    let mut lines = vec![
        true_clock(),
        acquire(1, a(), (0, 10), 1, 5),
        grant_decision(a(), 1, 5, 5),
    ];
    lines.extend(rest);
    lines
}

/// The verdict on a true authority clock, A's acquire over 0–10 µs granted `token` at reading 5
/// (live until 1.000005 s), then `rest`.
fn after_a_holds<const N: usize>(token: u64, rest: [Line; N]) -> Verdict {
    let mut lines = vec![true_clock(), acquire(1, a(), (0, 10), token, 5)];
    lines.extend(rest);
    verdict(lines)
}

#[test]
fn acquire_renew_held_release_and_takeover_are_linearizable() {
    let lines = vec![
        true_clock(),
        acquire(1, a(), (0, 10), 1, 5),
        renew(2, a(), 1, (500_000, 500_010), granted(1, 500_005 + TTL)),
        acquire_held(3, b(), (600_000, 600_010), Some(1)),
        // A live same-owner re-acquire keeps the token.
        acquire(4, a(), (650_000, 650_010), 1, 650_005),
        release(5, a(), 1, (700_000, 700_010)),
        acquire(6, b(), (800_000, 800_010), 2, 800_005),
        // A stale renew and a stale release of A's old lease change nothing.
        renew(
            7,
            a(),
            1,
            (900_000, 900_010),
            OpResult::Held {
                holder_token: Some(2),
            },
        ),
        release(8, a(), 1, (950_000, 950_010)),
        acquire_held(9, a(), (1_000_000, 1_000_010), Some(2)),
        // B's lease expires at 1_800_005; A takes over with a higher token.
        acquire(10, a(), (2_000_000, 2_000_010), 3, 2_000_005),
    ];
    assert_eq!(verdict(lines), Verdict::Linearizable);
}

#[test]
fn two_grants_overlapping_on_the_authority_clock_are_not_linearizable() {
    let v = after_a_holds(1, [acquire(2, b(), (500_000, 500_010), 2, 500_005)]);
    assert_eq!(stuck_index(&v), 1);
}

#[test]
fn expiry_is_judged_on_the_authority_clock_not_true_time() {
    // A slow authority clock (−20%): at true 1.2 s it reads 0.96 s, so A's lease (granted at
    // reading 0, expiring at 1 s) is still live there, though a TTL of true time has passed.
    let slow = || clock(0, 0, 0, -200_000, false);
    // B's acquire over true `from_us`..+10 µs, granted token 2 at authority reading `reading`.
    let b_takes_over = |clock: Line, from_us: u64, reading: u64| {
        let takeover = acquire(2, b(), (from_us, from_us + 10), 2, reading);
        verdict(vec![clock, acquire(1, a(), (0, 10), 1, 0), takeover])
    };
    let v = b_takes_over(slow(), 1_200_000, 960_000);
    assert_eq!(stuck_index(&v), 1);
    // At true 1.3 s it reads 1.04 s: expired, the takeover is legal.
    let v = b_takes_over(slow(), 1_300_000, 1_040_000);
    assert_eq!(v, Verdict::Linearizable);
    // A fast authority clock (+20%) reads 1.08 s at true 0.9 s: a takeover there is legal.
    let fast = clock(0, 0, 0, 200_000, false);
    assert_eq!(
        b_takes_over(fast, 900_000, 1_080_000),
        Verdict::Linearizable
    );
}

#[test]
fn a_grant_whose_instant_lies_outside_its_window_is_not_linearizable() {
    // The expiry says the authority decided at reading 300 000, but the call ran at 0..10.
    let lines = vec![true_clock(), acquire(1, a(), (0, 10), 1, 300_000)];
    assert_eq!(stuck_index(&verdict(lines)), 0);
}

#[test]
fn a_takeover_with_a_token_not_above_the_last_is_not_linearizable() {
    for token in [1, 2] {
        let v = after_a_holds(
            2,
            [acquire(2, b(), (2_000_000, 2_000_010), token, 2_000_005)],
        );
        assert_eq!(stuck_index(&v), 1, "token {token}");
    }
    // Even for the same owner: an expired lease's re-acquire is a takeover.
    let v = after_a_holds(2, [acquire(2, a(), (2_000_000, 2_000_010), 2, 2_000_005)]);
    assert_eq!(stuck_index(&v), 1);
    // Tokens may skip (a grant cut off by a crash may have raised the high-water mark).
    let v = after_a_holds(2, [acquire(2, b(), (2_000_000, 2_000_010), 7, 2_000_005)]);
    assert_eq!(v, Verdict::Linearizable);
}

#[test]
fn held_by_an_expired_lease_is_not_linearizable() {
    let v = after_a_holds(1, [acquire_held(2, b(), (2_000_000, 2_000_010), Some(1))]);
    assert_eq!(stuck_index(&v), 1);
    // Held when the window reaches back to before the expiry is fine.
    let v = after_a_holds(1, [acquire_held(2, b(), (900_000, 2_000_010), Some(1))]);
    assert_eq!(v, Verdict::Linearizable);
}

#[test]
fn a_renew_granted_after_expiry_or_after_takeover_is_not_linearizable() {
    let late = renew(
        2,
        a(),
        1,
        (1_500_000, 1_500_010),
        granted(1, 1_500_005 + TTL),
    );
    assert_eq!(stuck_index(&after_a_holds(1, [late])), 1);
    let takeover = acquire(2, b(), (1_500_000, 1_500_010), 2, 1_500_005);
    let stale = renew(
        3,
        a(),
        1,
        (1_600_000, 1_600_010),
        granted(1, 1_600_005 + TTL),
    );
    assert_eq!(stuck_index(&after_a_holds(1, [takeover, stale])), 2);
}

#[test]
fn a_grant_across_an_authority_restart_is_judged_on_its_uptime() {
    // A is granted at reading 5 (expiry 1_000_005). The authority is down from true 0.3 s to
    // 5 s; boot 1's clock starts again from 0. Its uptime then reads 0.3 s + its own reading.
    let restart = || {
        vec![
            clock(0, 0, 0, 0, false),
            clock(0, 300_000, 300_000, 0, true),
            clock(1, 5_000_000, 0, 0, false),
        ]
    };
    // At boot-1 reading 1 s (uptime 1.3 s) A's lease has run out: a takeover is legal.
    let mut lines = restart();
    lines.push(acquire(1, a(), (0, 10), 1, 5));
    lines.push(acquire(2, b(), (6_000_000, 6_000_010), 2, 1_000_000));
    assert_eq!(verdict(lines), Verdict::Linearizable);
    // At boot-1 reading 0.5 s (uptime 0.8 s) it had not: the grace period should have held it.
    let mut lines = restart();
    lines.push(acquire(1, a(), (0, 10), 1, 5));
    lines.push(acquire(2, b(), (5_500_000, 5_500_010), 2, 500_000));
    assert_eq!(stuck_index(&verdict(lines)), 1);
}

#[test]
fn an_unknown_acquire_revealed_by_a_decision_is_resolved_and_judged() {
    // A's acquire timed out, but the authority granted it token 1 at 5: B's grant at 0.5 s
    // overlaps A's lease.
    let lines = after_an_unknown_acquire([
        grant_decision(a(), 1, 5, 5),
        acquire(2, b(), (500_000, 500_010), 2, 500_005),
        grant_decision(b(), 2, 500_005, 500_005),
    ]);
    let ops = lease_ops(&lines, (1, 0, 0));
    assert_eq!(
        ops.ops[0].output,
        Some(LeaseOutput::Granted {
            token: 1,
            expiry_us: 1_000_005,
            ttl_us: TTL
        })
    );
    assert_eq!(ops.ops[0].ret, Some(5));
    assert_eq!(stuck_index(&verdict(lines)), 1);
}

#[test]
fn an_unknown_acquire_with_no_decision_had_no_effect() {
    let lines = after_an_unknown_acquire([
        acquire(2, b(), (500_000, 500_010), 1, 500_005),
        grant_decision(b(), 1, 500_005, 500_005),
    ]);
    let ops = lease_ops(&lines, (0, 1, 0));
    assert_eq!(ops.op_ids, [Some(2)]);
    assert_eq!(verdict(lines), Verdict::Linearizable);
}

#[test]
fn an_unknown_acquire_without_decision_lines_stays_unknown_and_is_linearizable() {
    // No decision lines at all: A's acquire may or may not have been granted, so B's grant
    // and A's later renew of token 1 both have a linearization.
    let lines = after_an_unknown_acquire([
        renew(2, a(), 1, (300_000, 300_010), granted(1, 300_005 + TTL)),
        acquire_held(3, b(), (500_000, 500_010), Some(1)),
    ]);
    let ops = lease_ops(&lines, (0, 0, 1));
    assert_eq!(ops.ops[0].output, None);
    assert_eq!(verdict(lines), Verdict::Linearizable);
}

fn decision(who: Process, decision: Decision, at_us: u64) -> Line {
    Line::Decision(DecisionLine {
        session: S.into(),
        owner: who,
        decision,
        at_authority_us: at_us,
        at_us,
    })
}

#[test]
fn an_unknown_renew_revealed_by_a_decision_extends_the_lease() {
    // A's renew timed out, but the authority renewed it at 0.9 s: at 1.5 s A still holds it.
    let base = || {
        after_a_is_granted([
            renew(2, a(), 1, (900_000, 1_000_000), timed_out()),
            decision(
                a(),
                Decision::Renew {
                    token: 1,
                    expiry_authority_us: 900_005 + TTL,
                    ttl_us: TTL,
                },
                900_005,
            ),
        ])
    };
    let mut held = base();
    held.push(acquire_held(3, b(), (1_500_000, 1_500_010), Some(1)));
    lease_ops(&held, (1, 0, 0));
    assert_eq!(verdict(held), Verdict::Linearizable);
    let mut granted_to_b = base();
    granted_to_b.push(acquire(3, b(), (1_500_000, 1_500_010), 2, 1_500_005));
    assert_eq!(stuck_index(&verdict(granted_to_b)), 2);
}

#[test]
fn an_unknown_release_revealed_by_a_decision_frees_the_session() {
    let base = || {
        after_a_is_granted([
            release_answered(2, a(), 1, (100, 100_000), timed_out()),
            acquire(3, b(), (200_000, 200_010), 2, 200_005),
            grant_decision(b(), 2, 200_005, 200_005),
        ])
    };
    let mut lines = base();
    lines.push(decision(
        a(),
        Decision::Release {
            token: 1,
            ended: true,
        },
        150,
    ));
    lease_ops(&lines, (1, 0, 0));
    assert_eq!(verdict(lines), Verdict::Linearizable);
    // Without the release decision the release never happened, and B's grant overlaps A's.
    assert_eq!(stuck_index(&verdict(base())), 1);
}

#[test]
fn a_call_answered_by_its_own_decision_returns_when_the_authority_decided() {
    // A's renew is refused "no live holder" while its lease is live, then A releases it. In
    // µs the renew's completion equals the release's invocation, so on op lines alone the two
    // are concurrent and the release may go first, which explains the refusal.
    let ops = || {
        vec![
            true_clock(),
            acquire(1, a(), (0, 10), 1, 5),
            renew(
                2,
                a(),
                1,
                (100_000, 100_200),
                OpResult::Held { holder_token: None },
            ),
            release(3, a(), 1, (100_200, 100_400)),
        ]
    };
    assert_eq!(verdict(ops()), Verdict::Linearizable);
    // The authority's decisions show the refusal came first (at 100 100, the release at
    // 100 300): the renew returns at 100 100, before the release, and cannot be explained.
    let mut lines = ops();
    lines.push(grant_decision(a(), 1, 5, 5));
    lines.push(decision(
        a(),
        Decision::Refuse {
            request: Request::Renew,
            token: Some(1),
            reason: Refusal::Held { holder_token: None },
        },
        100_100,
    ));
    lines.push(decision(
        a(),
        Decision::Release {
            token: 1,
            ended: true,
        },
        100_300,
    ));
    let ops = lease_operations(&History::from_lines("hand", lines.clone())).unwrap();
    assert_eq!(ops.ops[1].ret, Some(100_100));
    assert_eq!(ops.ops[2].ret, Some(100_300));
    assert_eq!(stuck_index(&verdict(lines)), 1);
}

/// A's hold of token 1 (granted at 5, live until 1.000005 s) ends at 0.2 s with no call of A's
/// (its process died: flock ends the hold with its holder), the authority's `release` decision
/// recorded with `ended`; then B's acquire at 0.2 s is granted token 2, its decision at the
/// same instant, after the release.
fn holder_gone_then_b_takes_over(ended: bool) -> Vec<Line> {
    after_a_is_granted([
        decision(a(), Decision::Release { token: 1, ended }, 200_005),
        acquire(2, b(), (200_000, 200_010), 2, 200_005),
        grant_decision(b(), 2, 200_005, 200_005),
    ])
}

#[test]
fn a_release_no_call_accounts_for_ends_the_hold_and_the_next_grant_takes_over() {
    let lines = holder_gone_then_b_takes_over(true);
    let ops = lease_ops(&lines, (0, 0, 0));
    // The authority's own operation, after the calls: a release of A's token 1 at the
    // decision's instant, by a process of its own.
    assert_eq!(ops.op_ids, [Some(1), Some(2), None]);
    let release = &ops.ops[2];
    assert_eq!(release.input.call, LeaseCall::Release { token: 1 });
    assert_eq!(ops.model.model.owners[release.input.owner as usize], a());
    assert_eq!((release.call, release.ret), (200_005, Some(200_005)));
    assert_eq!(release.output, Some(LeaseOutput::Released));
    let processes = [ops.ops[0].process, ops.ops[1].process, release.process];
    assert_eq!(processes, [0, 1, 2]);
    assert_eq!(
        ops.model.names,
        [
            "replica-1",
            "replica-2",
            "the authority (a decision no call accounts for)"
        ]
    );
    assert_eq!(verdict(lines), Verdict::Linearizable);
}

#[test]
fn a_grant_to_another_owner_while_the_hold_is_live_and_nothing_ended_it_is_not_linearizable() {
    // No release decision at all: B's grant at 0.2 s overlaps A's live lease.
    let mut lines = holder_gone_then_b_takes_over(true);
    lines.remove(3);
    assert_eq!(lease_ops(&lines, (0, 0, 0)).op_ids, [Some(1), Some(2)]);
    assert_eq!(stuck_index(&verdict(lines)), 1);
    // A release that ended nothing (a forked child's, or a stale one) frees nothing either:
    // it is left out, and B's grant still overlaps A's lease.
    let lines = holder_gone_then_b_takes_over(false);
    assert_eq!(lease_ops(&lines, (0, 0, 0)).op_ids, [Some(1), Some(2)]);
    assert_eq!(stuck_index(&verdict(lines)), 1);
}

#[test]
fn a_release_no_call_accounts_for_ends_only_the_lease_it_names() {
    // The authority's release names A's token 7, not the current token 1: the model's release
    // rule frees nothing, and B's grant still overlaps A's lease.
    let lines = after_a_is_granted([
        decision(
            a(),
            Decision::Release {
                token: 7,
                ended: true,
            },
            200_005,
        ),
        acquire(2, b(), (200_000, 200_010), 2, 200_005),
        grant_decision(b(), 2, 200_005, 200_005),
    ]);
    assert_eq!(
        lease_ops(&lines, (0, 0, 0)).op_ids,
        [Some(1), Some(2), None]
    );
    assert_eq!(stuck_index(&verdict(lines)), 1);
}

#[test]
fn an_unknown_release_takes_the_decision_before_the_authority_does() {
    // A's release timed out and the authority's release decision is its effect: the call is
    // resolved, and no operation of the authority is added.
    let lines = after_a_is_granted([
        release_answered(2, a(), 1, (200_000, 300_000), timed_out()),
        decision(
            a(),
            Decision::Release {
                token: 1,
                ended: true,
            },
            200_005,
        ),
        acquire(3, b(), (400_000, 400_010), 2, 400_005),
        grant_decision(b(), 2, 400_005, 400_005),
    ]);
    let ops = lease_ops(&lines, (1, 0, 0));
    assert_eq!(ops.op_ids, [Some(1), Some(2), Some(3)]);
    assert_eq!(ops.ops[1].ret, Some(200_005));
    assert_eq!(verdict(lines), Verdict::Linearizable);
}

#[test]
fn a_release_no_call_accounts_for_of_an_owner_that_calls_again_ends_nothing() {
    // A is not gone: it renews at 0.5 s, after the authority's release of its token. No
    // authority ends a live owner's hold unasked (a forked child's unlock of its parent's lock
    // is such a release), so the decision is left out and B's grant overlaps A's lease.
    let mut lines = holder_gone_then_b_takes_over(true);
    lines.push(renew(3, a(), 1, (500_000, 500_010), timed_out()));
    assert_eq!(lease_ops(&lines, (0, 1, 0)).op_ids, [Some(1), Some(2)]);
    assert_eq!(stuck_index(&verdict(lines)), 1);
}
