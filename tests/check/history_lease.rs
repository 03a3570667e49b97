//! The timed lease model on hand-built histories read through `check_lease_history`: expiry is
//! judged on the authority's clock (its clock segments, drift and restarts), tokens, and the
//! resolution of unknown-outcome calls through the authority's decision lines.

use leasesim::check::linearizability::lease::LeaseOutput;
use leasesim::check::linearizability::{Budget, Verdict, check_lease_history, lease_operations};
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

/// An acquire by `who` granted `token`, decided at authority reading `at` (expiry `at + TTL`).
fn acquire(id: u64, who: Process, window: (u64, u64), token: u64, at: u64) -> Line {
    op_line(
        id,
        who.clone(),
        Op::LeaseAcquire { owner: who },
        window,
        Outcome::Ok,
        granted(token, at + TTL),
    )
}

fn acquire_held(id: u64, who: Process, window: (u64, u64), holder_token: Option<u64>) -> Line {
    op_line(
        id,
        who.clone(),
        Op::LeaseAcquire { owner: who },
        window,
        Outcome::Fail,
        OpResult::Held { holder_token },
    )
}

fn acquire_unknown(id: u64, who: Process, window: (u64, u64)) -> Line {
    op_line(
        id,
        who.clone(),
        Op::LeaseAcquire { owner: who },
        window,
        Outcome::Info,
        OpResult::Unavailable {
            reason: "timeout".into(),
        },
    )
}

fn renew(id: u64, who: Process, token: u64, window: (u64, u64), result: OpResult) -> Line {
    let outcome = match result {
        OpResult::Granted { .. } => Outcome::Ok,
        _ => Outcome::Fail,
    };
    op_line(
        id,
        who.clone(),
        Op::LeaseRenew { owner: who, token },
        window,
        outcome,
        result,
    )
}

fn release(id: u64, who: Process, token: u64, window: (u64, u64)) -> Line {
    op_line(
        id,
        who.clone(),
        Op::LeaseRelease { owner: who, token },
        window,
        Outcome::Ok,
        OpResult::Released {},
    )
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
    let lines = vec![
        true_clock(),
        acquire(1, a(), (0, 10), 1, 5),
        acquire(2, b(), (500_000, 500_010), 2, 500_005),
    ];
    assert_eq!(stuck_index(&verdict(lines)), 1);
}

#[test]
fn expiry_is_judged_on_the_authority_clock_not_true_time() {
    // A slow authority clock (−20%): at true 1.2 s it reads 0.96 s, so A's lease (granted at
    // reading 0, expiring at 1 s) is still live there, though a TTL of true time has passed.
    let slow = || clock(0, 0, 0, -200_000, false);
    let lines = vec![
        slow(),
        acquire(1, a(), (0, 10), 1, 0),
        acquire(2, b(), (1_200_000, 1_200_010), 2, 960_000),
    ];
    assert_eq!(stuck_index(&verdict(lines)), 1);
    // At true 1.3 s it reads 1.04 s: expired, the takeover is legal.
    let lines = vec![
        slow(),
        acquire(1, a(), (0, 10), 1, 0),
        acquire(2, b(), (1_300_000, 1_300_010), 2, 1_040_000),
    ];
    assert_eq!(verdict(lines), Verdict::Linearizable);
    // A fast authority clock (+20%) reads 1.08 s at true 0.9 s: a takeover there is legal.
    let lines = vec![
        clock(0, 0, 0, 200_000, false),
        acquire(1, a(), (0, 10), 1, 0),
        acquire(2, b(), (900_000, 900_010), 2, 1_080_000),
    ];
    assert_eq!(verdict(lines), Verdict::Linearizable);
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
        let lines = vec![
            true_clock(),
            acquire(1, a(), (0, 10), 2, 5),
            acquire(2, b(), (2_000_000, 2_000_010), token, 2_000_005),
        ];
        assert_eq!(stuck_index(&verdict(lines)), 1, "token {token}");
    }
    // Even for the same owner: an expired lease's re-acquire is a takeover.
    let lines = vec![
        true_clock(),
        acquire(1, a(), (0, 10), 2, 5),
        acquire(2, a(), (2_000_000, 2_000_010), 2, 2_000_005),
    ];
    assert_eq!(stuck_index(&verdict(lines)), 1);
    // Tokens may skip (a grant cut off by a crash may have raised the high-water mark).
    let lines = vec![
        true_clock(),
        acquire(1, a(), (0, 10), 2, 5),
        acquire(2, b(), (2_000_000, 2_000_010), 7, 2_000_005),
    ];
    assert_eq!(verdict(lines), Verdict::Linearizable);
}

#[test]
fn held_by_an_expired_lease_is_not_linearizable() {
    let lines = vec![
        true_clock(),
        acquire(1, a(), (0, 10), 1, 5),
        acquire_held(2, b(), (2_000_000, 2_000_010), Some(1)),
    ];
    assert_eq!(stuck_index(&verdict(lines)), 1);
    // Held when the window reaches back to before the expiry is fine.
    let lines = vec![
        true_clock(),
        acquire(1, a(), (0, 10), 1, 5),
        acquire_held(2, b(), (900_000, 2_000_010), Some(1)),
    ];
    assert_eq!(verdict(lines), Verdict::Linearizable);
}

#[test]
fn a_renew_granted_after_expiry_or_after_takeover_is_not_linearizable() {
    let lines = vec![
        true_clock(),
        acquire(1, a(), (0, 10), 1, 5),
        renew(
            2,
            a(),
            1,
            (1_500_000, 1_500_010),
            granted(1, 1_500_005 + TTL),
        ),
    ];
    assert_eq!(stuck_index(&verdict(lines)), 1);
    let lines = vec![
        true_clock(),
        acquire(1, a(), (0, 10), 1, 5),
        acquire(2, b(), (1_500_000, 1_500_010), 2, 1_500_005),
        renew(
            3,
            a(),
            1,
            (1_600_000, 1_600_010),
            granted(1, 1_600_005 + TTL),
        ),
    ];
    assert_eq!(stuck_index(&verdict(lines)), 2);
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
    let lines = vec![
        true_clock(),
        acquire_unknown(1, a(), (0, 100_000)),
        grant_decision(a(), 1, 5, 5),
        acquire(2, b(), (500_000, 500_010), 2, 500_005),
        grant_decision(b(), 2, 500_005, 500_005),
    ];
    let history = History::from_lines("hand", lines.clone());
    let ops = lease_operations(&history).unwrap();
    assert_eq!((ops.resolved, ops.dropped, ops.unknown), (1, 0, 0));
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
    let lines = vec![
        true_clock(),
        acquire_unknown(1, a(), (0, 100_000)),
        acquire(2, b(), (500_000, 500_010), 1, 500_005),
        grant_decision(b(), 1, 500_005, 500_005),
    ];
    let history = History::from_lines("hand", lines.clone());
    let ops = lease_operations(&history).unwrap();
    assert_eq!((ops.resolved, ops.dropped, ops.unknown), (0, 1, 0));
    assert_eq!(ops.op_ids, [Some(2)]);
    assert_eq!(verdict(lines), Verdict::Linearizable);
}

#[test]
fn an_unknown_acquire_without_decision_lines_stays_unknown_and_is_linearizable() {
    // No decision lines at all: A's acquire may or may not have been granted, so B's grant
    // and A's later renew of token 1 both have a linearization.
    let lines = vec![
        true_clock(),
        acquire_unknown(1, a(), (0, 100_000)),
        renew(2, a(), 1, (300_000, 300_010), granted(1, 300_005 + TTL)),
        acquire_held(3, b(), (500_000, 500_010), Some(1)),
    ];
    let history = History::from_lines("hand", lines.clone());
    let ops = lease_operations(&history).unwrap();
    assert_eq!((ops.resolved, ops.dropped, ops.unknown), (0, 0, 1));
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

fn renew_unknown(id: u64, who: Process, token: u64, window: (u64, u64)) -> Line {
    op_line(
        id,
        who.clone(),
        Op::LeaseRenew { owner: who, token },
        window,
        Outcome::Info,
        OpResult::Unavailable {
            reason: "timeout".into(),
        },
    )
}

fn release_unknown(id: u64, who: Process, token: u64, window: (u64, u64)) -> Line {
    op_line(
        id,
        who.clone(),
        Op::LeaseRelease { owner: who, token },
        window,
        Outcome::Info,
        OpResult::Unavailable {
            reason: "timeout".into(),
        },
    )
}

#[test]
fn an_unknown_renew_revealed_by_a_decision_extends_the_lease() {
    // A's renew timed out, but the authority renewed it at 0.9 s: at 1.5 s A still holds it.
    let base = || {
        vec![
            true_clock(),
            acquire(1, a(), (0, 10), 1, 5),
            grant_decision(a(), 1, 5, 5),
            renew_unknown(2, a(), 1, (900_000, 1_000_000)),
            decision(
                a(),
                Decision::Renew {
                    token: 1,
                    expiry_authority_us: 900_005 + TTL,
                    ttl_us: TTL,
                },
                900_005,
            ),
        ]
    };
    let mut held = base();
    held.push(acquire_held(3, b(), (1_500_000, 1_500_010), Some(1)));
    let ops = lease_operations(&History::from_lines("hand", held.clone())).unwrap();
    assert_eq!((ops.resolved, ops.dropped, ops.unknown), (1, 0, 0));
    assert_eq!(verdict(held), Verdict::Linearizable);
    let mut granted_to_b = base();
    granted_to_b.push(acquire(3, b(), (1_500_000, 1_500_010), 2, 1_500_005));
    assert_eq!(stuck_index(&verdict(granted_to_b)), 2);
}

#[test]
fn an_unknown_release_revealed_by_a_decision_frees_the_session() {
    let base = || {
        vec![
            true_clock(),
            acquire(1, a(), (0, 10), 1, 5),
            grant_decision(a(), 1, 5, 5),
            release_unknown(2, a(), 1, (100, 100_000)),
            acquire(3, b(), (200_000, 200_010), 2, 200_005),
            grant_decision(b(), 2, 200_005, 200_005),
        ]
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
    let ops = lease_operations(&History::from_lines("hand", lines.clone())).unwrap();
    assert_eq!((ops.resolved, ops.dropped, ops.unknown), (1, 0, 0));
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
