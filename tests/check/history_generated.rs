//! The lease and ledger checkers on generated histories (`generated.rs`): correct ones are
//! linearizable at any length, one planted wrong answer is found, and a budget too small for
//! the history ends `Unknown`, never in a false verdict.

use leasesim::check::linearizability::{
    Budget, Exhausted, Verdict, check_lease_history, check_ledger_history,
};
use leasesim::history::{History, Line, Op, OpResult, Outcome};

use crate::generated::{Corruption, Shape, lease_history, ledger_history};

const SEEDS: [u64; 4] = [1, 2, 3, 4];

/// What a budget of steps too small for the history answers.
const UNKNOWN: Verdict = Verdict::Unknown(Exhausted::Steps);

fn results(history: &History) -> impl Iterator<Item = (&Outcome, &OpResult)> {
    history.lines().iter().filter_map(|line| match line {
        Line::Op(op) => Some((&op.outcome, op.result.as_ref()?)),
        _ => None,
    })
}

fn lease(shape: &Shape, budget: Budget) -> Verdict {
    check_lease_history(&lease_history(shape), budget).expect("a valid history")
}

fn ledger(shape: &Shape, budget: Budget) -> Verdict {
    check_ledger_history(&ledger_history(shape), budget).expect("a valid history")
}

#[test]
fn generated_lease_histories_have_takeovers_refusals_and_releases() {
    let history = lease_history(&Shape::new(2_000, 1));
    let tokens: std::collections::BTreeSet<u64> = results(&history)
        .filter_map(|(_, result)| match result {
            OpResult::Granted { token, .. } => Some(*token),
            _ => None,
        })
        .collect();
    assert!(tokens.len() >= 5, "takeovers: tokens {tokens:?}");
    let count = |f: fn(&OpResult) -> bool| results(&history).filter(|(_, r)| f(r)).count();
    assert!(
        count(|r| matches!(
            r,
            OpResult::Held {
                holder_token: Some(_)
            }
        )) >= 100
    );
    let refused_renews = history
        .ops()
        .filter(|op| matches!(op.op, Op::LeaseRenew { .. }) && op.outcome == Outcome::Fail)
        .count();
    assert!(
        refused_renews >= 5,
        "holders paused past the TTL: {refused_renews}"
    );
    assert!(count(|r| matches!(r, OpResult::Released {})) >= 5);
}

#[test]
fn generated_ledger_histories_have_conflicts_and_unknown_outcomes() {
    let history = ledger_history(&Shape::new(2_000, 1));
    let count = |f: fn(&OpResult) -> bool| results(&history).filter(|(_, r)| f(r)).count();
    assert!(count(|r| matches!(r, OpResult::Appended { .. })) >= 200);
    assert!(count(|r| matches!(r, OpResult::Conflict { .. })) >= 100);
    assert!(
        results(&history)
            .filter(|(o, _)| **o == Outcome::Info)
            .count()
            >= 5
    );
}

#[test]
fn correct_generated_histories_are_linearizable() {
    for seed in SEEDS {
        let shape = Shape::new(2_000, seed);
        assert_eq!(
            lease(&shape, Budget::default()),
            Verdict::Linearizable,
            "lease, seed {seed}"
        );
        assert_eq!(
            ledger(&shape, Budget::default()),
            Verdict::Linearizable,
            "ledger, seed {seed}"
        );
    }
}

/// For each seed: `corruption` half way changes the generated history, and the checker finds
/// it.
fn planted_is_found(
    corruption: Corruption,
    generate: fn(&Shape) -> History,
    judge: fn(&Shape, Budget) -> Verdict,
) {
    for seed in SEEDS {
        let correct = Shape::new(2_000, seed);
        let shape = Shape {
            corruption: Some(corruption),
            ..correct
        };
        assert_ne!(generate(&shape), generate(&correct), "seed {seed}: planted");
        let verdict = judge(&shape, Budget::default());
        assert!(
            matches!(verdict, Verdict::NotLinearizable(_)),
            "seed {seed}: {verdict:?}"
        );
    }
}

#[test]
fn a_second_holder_granted_while_a_lease_is_live_is_not_linearizable() {
    planted_is_found(
        Corruption::DoubleGrant { after: 1_000 },
        lease_history,
        lease,
    );
}

#[test]
fn a_tip_read_that_goes_backwards_is_not_linearizable() {
    planted_is_found(
        Corruption::StaleTip { after: 1_000 },
        ledger_history,
        ledger,
    );
}

#[test]
fn a_budget_too_small_for_the_history_ends_unknown_never_false() {
    let budget = Budget::steps(1_000);
    let correct = Shape::new(10_000, 7);
    let late = Some(Corruption::DoubleGrant { after: 9_000 });
    let late_tip = Some(Corruption::StaleTip { after: 9_000 });
    assert_eq!(lease(&correct, budget), UNKNOWN);
    assert_eq!(ledger(&correct, budget), UNKNOWN);
    let bad = |corruption| Shape {
        corruption,
        ..correct
    };
    assert_eq!(lease(&bad(late), budget), UNKNOWN);
    assert_eq!(ledger(&bad(late_tip), budget), UNKNOWN);
}
