//! The engine on small hand-built histories.

use leasesim::check::linearizability::register::{CasRegister, RegisterInput, RegisterOutput};
use leasesim::check::linearizability::{
    Budget, Exhausted, Operation, Verdict, check, check_counted, check_measured,
};

type Op = Operation<RegisterInput, RegisterOutput>;

fn op(
    process: u64,
    call: u64,
    ret: Option<u64>,
    input: RegisterInput,
    output: Option<RegisterOutput>,
) -> Op {
    Operation {
        process,
        input,
        output,
        call,
        ret,
    }
}

fn write(p: u64, call: u64, ret: u64, v: i64) -> Op {
    op(
        p,
        call,
        Some(ret),
        RegisterInput::Write(v),
        Some(RegisterOutput::Written),
    )
}

fn read(p: u64, call: u64, ret: u64, v: Option<i64>) -> Op {
    op(
        p,
        call,
        Some(ret),
        RegisterInput::Read,
        Some(RegisterOutput::Read(v)),
    )
}

fn verdict(ops: &[Op]) -> Verdict {
    check(&CasRegister, ops, Budget::default())
}

#[test]
fn concurrent_write_and_read_is_linearizable_either_way() {
    assert_eq!(
        verdict(&[write(0, 0, 10, 1), read(1, 1, 5, Some(1))]),
        Verdict::Linearizable
    );
    assert_eq!(
        verdict(&[write(0, 0, 10, 1), read(1, 1, 5, None)]),
        Verdict::Linearizable
    );
}

#[test]
fn a_stale_read_after_a_completed_write_is_caught_and_explained() {
    let ops = [write(0, 0, 1, 1), read(1, 2, 3, None)];
    let Verdict::NotLinearizable(e) = verdict(&ops) else {
        panic!("stale read accepted")
    };
    assert_eq!(e.stuck_index, 1);
    assert_eq!(
        (e.stuck_process, e.stuck_call, e.stuck_return),
        (1, 2, Some(3))
    );
    assert_eq!(
        e.summary,
        "process 1 read nil at [2, 3], but the register could only hold 1 then"
    );
    assert_eq!(
        e.states_before,
        vec!["the register holds 1: a read then returns 1, not nil".to_string()]
    );
    assert_eq!(
        e.longest_prefix,
        vec!["process 0 wrote 1 at [0, 1] -> the register holds 1".to_string()]
    );
    assert_eq!(e.longest_prefix_indices, vec![0]);
}

#[test]
fn an_unknown_write_may_or_may_not_take_effect() {
    let unknown = op(0, 0, None, RegisterInput::Write(7), None);
    assert_eq!(
        verdict(&[unknown.clone(), read(1, 1, 2, Some(7))]),
        Verdict::Linearizable
    );
    assert_eq!(
        verdict(&[unknown.clone(), read(1, 1, 2, None)]),
        Verdict::Linearizable
    );
    assert!(matches!(
        verdict(&[unknown, read(1, 1, 2, Some(7)), read(1, 3, 4, None)]),
        Verdict::NotLinearizable(_)
    ));
}

#[test]
fn a_failed_cas_means_the_value_differed() {
    let cas = |call, ret, ok| {
        op(
            2,
            call,
            Some(ret),
            RegisterInput::Cas { old: 1, new: 2 },
            Some(RegisterOutput::Cas(ok)),
        )
    };
    assert!(matches!(
        verdict(&[write(0, 0, 1, 1), cas(2, 3, false)]),
        Verdict::NotLinearizable(_)
    ));
    assert_eq!(
        verdict(&[write(0, 0, 1, 1), cas(2, 3, true), read(1, 4, 5, Some(2))]),
        Verdict::Linearizable
    );
}

#[test]
fn an_exhausted_budget_is_unknown_never_linearizable() {
    let ops: Vec<Op> = (0..20).map(|i| write(i, 0, 100, i as i64)).collect();
    let mut with_read = ops.clone();
    with_read.push(read(99, 101, 102, Some(5)));
    assert_eq!(
        check(&CasRegister, &with_read, Budget::steps(3)),
        Verdict::Unknown(Exhausted::Steps)
    );
    assert_eq!(verdict(&with_read), Verdict::Linearizable);
}

/// The memory budget (docs/checks.md#linearizability-engine): twenty concurrent writes and a
/// read of the sixth need a memo of many positions. The default budget decides the history;
/// a cap of exactly the positions it needs decides it the same way, and one position fewer
/// answers `unknown` because of the memo, never a verdict.
#[test]
fn a_memo_cap_below_what_the_search_needs_is_unknown_because_of_memory() {
    let mut ops: Vec<Op> = (0..20).map(|i| write(i, 0, 100, i as i64)).collect();
    ops.push(read(99, 101, 102, Some(5)));
    let (decided, work) = check_measured(&CasRegister, &ops, Budget::default());
    assert_eq!(decided, Verdict::Linearizable);
    assert!(
        work.memo_entries > 100 && work.memo_entries < Budget::default().max_memo_entries,
        "a big memo, within the default cap: {work:?}"
    );
    let capped = |entries| check(&CasRegister, &ops, Budget::default().memo_entries(entries));
    assert_eq!(capped(work.memo_entries), Verdict::Linearizable);
    let unknown = capped(work.memo_entries - 1);
    assert_eq!(unknown, Verdict::Unknown(Exhausted::Memo));
    assert_eq!(
        Exhausted::Memo.to_string(),
        "the search's memo reached its cap (raise it with leasesim check --memo-entries)"
    );
    let failing = [write(0, 0, 1, 1), read(1, 2, 3, Some(2))];
    assert!(
        matches!(
            check(&CasRegister, &failing, Budget::default().memo_entries(1)),
            Verdict::NotLinearizable(_)
        ),
        "a violation found within the memo cap is reported"
    );
}

/// Read-only operations first (the engine's rule): nested reads of one value fit in every
/// order and no twin orders them, so without the rule the search tries every subset of them
/// (2^40) before it can say that a read of a value never written cannot be placed.
#[test]
fn forty_nested_concurrent_reads_are_placed_in_linear_work() {
    let mut ops = vec![write(0, 0, 1, 1)];
    ops.extend((0..40).map(|i| read(1 + i, 2 + i, 200 - i, Some(1))));
    let (verdict, work) = check_counted(&CasRegister, &ops, Budget::default());
    assert_eq!(verdict, Verdict::Linearizable);
    assert!(work < 10_000, "linear work, not 2^40: {work} steps");
    ops.push(read(99, 50, 150, Some(7)));
    let (verdict, work) = check_counted(&CasRegister, &ops, Budget::default());
    let Verdict::NotLinearizable(explanation) = verdict else {
        panic!("a read of a value never written is a violation: {verdict:?}");
    };
    assert_eq!(explanation.stuck_process, 99);
    assert!(work < 10_000, "linear work, not 2^40: {work} steps");
}

/// The read-only claims among `calls`, each checked in every one of `states`: a model's
/// read-only claim holds in every state when the step leaves the state as it is or does not
/// fit (the engine places such operations without trying other orders). Returns how many
/// claims there were.
fn read_only_claims_that_hold<M: leasesim::check::linearizability::Model>(
    model: &M,
    states: &[M::State],
    calls: &[(M::Input, M::Output)],
) -> usize {
    let mut claims = 0;
    for (input, output) in calls {
        if !model.is_read_only(input, output) {
            continue;
        }
        claims += 1;
        for state in states {
            let next = model.step(state, input, Some(output));
            assert!(
                next.as_ref().is_none_or(|next| next == state),
                "{input:?} -> {output:?} is read-only but changes {state:?} to {next:?}"
            );
        }
    }
    claims
}

#[test]
fn every_read_only_claim_of_the_register_leaves_every_state_as_it_is() {
    let values: Vec<Option<i64>> = std::iter::once(None).chain((0..4).map(Some)).collect();
    let mut calls = vec![(RegisterInput::Read, RegisterOutput::Written)];
    for &v in &values {
        calls.push((RegisterInput::Read, RegisterOutput::Read(v)));
    }
    for old in 0..4 {
        calls.push((RegisterInput::Write(old), RegisterOutput::Written));
        for new in 0..4 {
            for swapped in [false, true] {
                calls.push((
                    RegisterInput::Cas { old, new },
                    RegisterOutput::Cas(swapped),
                ));
            }
        }
    }
    assert_eq!(
        read_only_claims_that_hold(&CasRegister, &values, &calls),
        5 + 16
    );
}

#[test]
fn every_read_only_claim_of_the_kv_store_leaves_every_state_as_it_is() {
    use leasesim::check::linearizability::kv::{KvInput, KvOutput, KvStore, KvValue};

    let strings = ["", "a", "ab", "b"];
    let states: Vec<KvValue> = strings.iter().map(|&s| KvValue::from(s)).collect();
    let key = || "k".to_string();
    let mut calls = Vec::new();
    for s in strings {
        calls.push((KvInput::Get { key: key() }, KvOutput::Got(s.to_string())));
        calls.push((
            KvInput::Put {
                key: key(),
                value: s.into(),
            },
            KvOutput::Done,
        ));
        calls.push((
            KvInput::Append {
                key: key(),
                value: s.into(),
            },
            KvOutput::Done,
        ));
    }
    assert_eq!(
        read_only_claims_that_hold(&KvStore, &states, &calls),
        strings.len()
    );
}

#[test]
fn every_read_only_claim_of_the_ledger_leaves_every_state_as_it_is() {
    use leasesim::check::linearizability::ledger::{
        CasLedger, LedgerCall, LedgerInput, LedgerOutput,
    };

    let tips: Vec<u64> = (0..4).collect();
    let session = || "s".to_string();
    let mut calls = Vec::new();
    for tip in 0..4 {
        calls.push((
            LedgerInput {
                session: session(),
                call: LedgerCall::Tip,
            },
            LedgerOutput::Tip(tip),
        ));
        for may_commit in [false, true] {
            let call = LedgerCall::Append {
                expected: tip,
                record: "r".into(),
                may_commit,
            };
            let input = LedgerInput {
                session: session(),
                call,
            };
            calls.push((input.clone(), LedgerOutput::Appended(tip + 1)));
            calls.push((
                input,
                LedgerOutput::Conflict {
                    actual: (tip + 1) % 4,
                },
            ));
        }
    }
    assert_eq!(read_only_claims_that_hold(&CasLedger, &tips, &calls), 4 + 8);
}

mod partitions {
    use leasesim::check::linearizability::kv::{KvInput, KvOutput, KvStore};
    use leasesim::check::linearizability::{Budget, Exhausted, Operation, Verdict, check};

    type KvOp = Operation<KvInput, KvOutput>;

    fn put(process: u64, call: u64, key: &str, value: &str) -> KvOp {
        Operation {
            process,
            input: KvInput::Put {
                key: key.into(),
                value: value.into(),
            },
            output: Some(KvOutput::Done),
            call,
            ret: Some(call + 1),
        }
    }

    fn get(process: u64, call: u64, key: &str, seen: &str) -> KvOp {
        Operation {
            process,
            input: KvInput::Get { key: key.into() },
            output: Some(KvOutput::Got(seen.into())),
            call,
            ret: Some(call + 1),
        }
    }

    /// 40 keys, each a put then a get; the keys in `stale` read a value never written. Listed
    /// in reverse key order, so that key order and history order disagree.
    fn history(stale: &[&str]) -> Vec<KvOp> {
        let mut ops = Vec::new();
        for k in (0..40).rev() {
            let key = format!("k{k:02}");
            let seen = if stale.contains(&key.as_str()) {
                "old"
            } else {
                "new"
            };
            ops.push(put(k, 10 * k, &key, "new"));
            ops.push(get(100 + k, 10 * k + 5, &key, seen));
        }
        ops
    }

    #[test]
    fn the_first_failing_partition_in_key_order_is_reported_whatever_the_threads_do() {
        let ops = history(&["k07", "k31", "k12"]);
        let first = check(&KvStore, &ops, Budget::default());
        let Verdict::NotLinearizable(explanation) = &first else {
            panic!("stale reads accepted: {first:?}");
        };
        assert_eq!(explanation.partition, "\"k07\"");
        assert_eq!(
            explanation.summary,
            "process 107 read \"old\" from key \"k07\" at [75, 76], but the key could only hold \"new\" then"
        );
        for _ in 0..50 {
            assert_eq!(check(&KvStore, &ops, Budget::default()), first);
        }
    }

    #[test]
    fn many_partitions_all_linearizable() {
        assert_eq!(
            check(&KvStore, &history(&[]), Budget::default()),
            Verdict::Linearizable
        );
    }

    #[test]
    fn a_violation_beats_a_partition_out_of_budget_and_unknown_needs_no_violation() {
        // Key "a" needs many steps (20 concurrent puts, then a get); key "b" fails at once.
        let ops = concurrent_puts_then_a_get(20, "5");
        let failing = and_b_failing_at_once(&ops);
        assert_eq!(
            check(&KvStore, &ops, Budget::steps(20)),
            Verdict::Unknown(Exhausted::Steps)
        );
        let Verdict::NotLinearizable(e) = check(&KvStore, &failing, Budget::steps(20)) else {
            panic!("a violation in a later partition must still be reported");
        };
        assert_eq!(e.partition, "\"b\"");
    }

    /// Key "a" is not linearizable, but proving it takes more than the first round's 65,536
    /// steps (13 concurrent puts, then a get of a value never written: every order of the puts
    /// is tried); key "b" fails at once.
    fn slow_a_fast_b() -> (Vec<KvOp>, Vec<KvOp>) {
        let slow = concurrent_puts_then_a_get(13, "never written");
        let both = and_b_failing_at_once(&slow);
        (slow, both)
    }

    /// Processes `0..n` each put their number to key "a" over 0–100, then process 99 gets
    /// `seen` from it at 101.
    fn concurrent_puts_then_a_get(n: u64, seen: &str) -> Vec<KvOp> {
        let mut ops: Vec<KvOp> = (0..n)
            .map(|i| Operation {
                ret: Some(100),
                ..put(i, 0, "a", &i.to_string())
            })
            .collect();
        ops.push(get(99, 101, "a", seen));
        ops
    }

    /// `ops`, then key "b": a put of "x", and after it a get of "y", a value never written.
    fn and_b_failing_at_once(ops: &[KvOp]) -> Vec<KvOp> {
        let mut with_b = ops.to_vec();
        with_b.push(put(200, 0, "b", "x"));
        with_b.push(get(201, 5, "b", "y"));
        with_b
    }

    #[test]
    fn the_smallest_key_failing_in_the_first_round_with_a_failure_is_reported() {
        let (slow, both) = slow_a_fast_b();
        let (verdict, spent) =
            leasesim::check::linearizability::check_counted(&KvStore, &slow, Budget::default());
        assert!(
            matches!(&verdict, Verdict::NotLinearizable(e) if e.partition == "\"a\""),
            "{verdict:?}"
        );
        assert!(
            spent > 65_536,
            "key a fails only after the first round: {spent}"
        );
        let first = check(&KvStore, &both, Budget::default());
        let Verdict::NotLinearizable(e) = &first else {
            panic!("the violations are not found: {first:?}");
        };
        assert_eq!(e.partition, "\"b\"", "b fails in round 0, a only later");
        for _ in 0..20 {
            assert_eq!(check(&KvStore, &both, Budget::default()), first);
        }
    }

    #[test]
    fn with_one_round_of_budget_the_smallest_failing_key_is_still_found() {
        // A budget below the first round's allowance is a single round: b fails in it, and a
        // is out of budget, so b is reported; with a only, the verdict is unknown.
        let (slow, both) = slow_a_fast_b();
        assert_eq!(
            check(&KvStore, &slow, Budget::steps(1000)),
            Verdict::Unknown(Exhausted::Steps)
        );
        let Verdict::NotLinearizable(e) = check(&KvStore, &both, Budget::steps(1000)) else {
            panic!("b's violation must be reported");
        };
        assert_eq!(e.partition, "\"b\"");
    }
}
