//! Differential test (proptest): the engine against a brute-force checker that tries every
//! ordering of the operations that respects real time (and every subset of the unknown-outcome
//! operations), on 10,000 small random register and 10,000 small random key-value histories.
//!
//! The runs are deterministic: a fixed ChaCha seed, no failure-persistence files. A failure
//! shrinks to a minimal history and prints it. To explore other histories locally, set
//! `DIFFERENTIAL_SEED=<u64>` (CI uses [`SEED`]). The generated worst-case families
//! (`families.rs`) are compared with brute force the same way, at small sizes.

use std::sync::atomic::{AtomicUsize, Ordering};

use proptest::prelude::*;
use proptest::sample::Index;
use proptest::test_runner::{Config, RngAlgorithm, RngSeed, TestCaseError, TestError, TestRunner};

use leasesim::check::linearizability::kv::{KvInput, KvOutput, KvStore};
use leasesim::check::linearizability::ledger::CasLedger;
use leasesim::check::linearizability::register::{CasRegister, RegisterInput, RegisterOutput};
use leasesim::check::linearizability::{Budget, Model, Operation, Verdict, check};

use super::families;

const CASES: u32 = 10_000;

/// The RNG seed of the CI runs.
const SEED: u64 = 0x6c65_6173_6573_696d;

/// Whether some real-time-respecting order of `ops` (with any subset of the unknown-outcome
/// ones) is accepted by `model`. `y` must precede `x` when `y` returned before `x` was called.
fn brute_force<M: Model>(model: &M, ops: &[Operation<M::Input, M::Output>]) -> bool {
    let unknown: Vec<usize> = (0..ops.len())
        .filter(|&i| ops[i].output.is_none())
        .collect();
    (0u32..1 << unknown.len()).any(|subset| {
        let mut placed = vec![false; ops.len()];
        for (bit, &i) in unknown.iter().enumerate() {
            placed[i] = subset & (1 << bit) == 0;
        }
        let mut keys: Vec<M::Key> = ops.iter().map(|op| model.key(&op.input)).collect();
        keys.sort();
        keys.dedup();
        keys.iter().all(|key| {
            let mut placed = placed.clone();
            for (i, op) in ops.iter().enumerate() {
                placed[i] |= model.key(&op.input) != *key;
            }
            orders(model, ops, &mut placed, model.init())
        })
    })
}

fn ret<I, O>(op: &Operation<I, O>) -> u64 {
    match (&op.output, op.ret) {
        (Some(_), Some(ret)) => ret,
        _ => u64::MAX,
    }
}

fn orders<M: Model>(
    model: &M,
    ops: &[Operation<M::Input, M::Output>],
    placed: &mut [bool],
    state: M::State,
) -> bool {
    if placed.iter().all(|&p| p) {
        return true;
    }
    for x in 0..ops.len() {
        let blocked = (0..ops.len()).any(|y| !placed[y] && y != x && ret(&ops[y]) < ops[x].call);
        if placed[x] || blocked {
            continue;
        }
        if let Some(next) = model.step(&state, &ops[x].input, ops[x].output.as_ref()) {
            placed[x] = true;
            let found = orders(model, ops, placed, next);
            placed[x] = false;
            if found {
                return true;
            }
        }
    }
    false
}

/// One generated operation before its output is known: its interval, where it takes effect,
/// and whether its outcome is reported.
#[derive(Clone, Debug)]
struct Plan<I> {
    input: I,
    call: u64,
    ret: u64,
    /// The linearization point; `None` for an unknown-outcome op that never takes effect.
    point: Option<u64>,
    /// The outcome is unknown (`output: None`); the op may take effect after it returns.
    unknown: bool,
}

/// Times and a linearization point: a call in 0..20 lasting 0..=5; a known op takes effect
/// inside its interval, an unknown one (one in five) takes effect within 12 of its call or,
/// half the time, never.
fn plan<I: std::fmt::Debug + Clone>(
    input: impl Strategy<Value = I>,
) -> impl Strategy<Value = Plan<I>> {
    (
        input,
        0..20u64,
        0..6u64,
        0..6u64,
        prop::bool::weighted(0.2),
        prop::option::of(0..12u64),
    )
        .prop_map(|(input, call, length, offset, unknown, late)| Plan {
            input,
            call,
            ret: call + length,
            point: if unknown {
                late.map(|late| call + late)
            } else {
                Some(call + offset % (length + 1))
            },
            unknown,
        })
}

/// Runs the ops in the order of their points through `apply` (a correct object) and records
/// its outputs for the ops whose outcome is known; one op per process.
fn history<I, O>(plans: Vec<Plan<I>>, mut apply: impl FnMut(&I) -> O) -> Vec<Operation<I, O>> {
    let points: Vec<_> = plans
        .iter()
        .map(|plan| (plan.point, plan.unknown))
        .collect();
    let outputs = families::outputs_by_point(&points, |i| apply(&plans[i].input));
    plans
        .into_iter()
        .zip(outputs)
        .enumerate()
        .map(|(process, (plan, output))| Operation {
            process: process as u64,
            input: plan.input,
            output,
            call: plan.call,
            ret: Some(plan.ret),
        })
        .collect()
}

/// Up to 6 register ops (read, write or cas of 0..3), half the time with one known output
/// replaced by an arbitrary one.
fn register_histories() -> impl Strategy<Value = Vec<Operation<RegisterInput, RegisterOutput>>> {
    let input = prop_oneof![
        Just(RegisterInput::Read),
        (0..3i64).prop_map(RegisterInput::Write),
        (0..3i64, 0..3i64).prop_map(|(old, new)| RegisterInput::Cas { old, new }),
    ];
    (
        prop::collection::vec(plan(input), 1..=6),
        prop::option::of((any::<Index>(), 0..4usize, any::<bool>())),
    )
        .prop_map(|(plans, corrupt)| {
            let mut state: Option<i64> = None;
            let mut ops = history(plans, |input| families::register_apply(&mut state, input));
            if let Some((index, read, swapped)) = corrupt {
                let at = index.index(ops.len());
                let op = &mut ops[at];
                if op.output.is_some() {
                    op.output = Some(match op.input {
                        RegisterInput::Read => {
                            RegisterOutput::Read([None, Some(0), Some(1), Some(2)][read])
                        }
                        RegisterInput::Write(_) => RegisterOutput::Written,
                        RegisterInput::Cas { .. } => RegisterOutput::Cas(swapped),
                    });
                }
            }
            ops
        })
}

/// Up to 7 get/put/append ops on keys "a" and "b" with values "x" and "y", half the time with
/// one known get's output replaced by an arbitrary one.
fn kv_histories() -> impl Strategy<Value = Vec<Operation<KvInput, KvOutput>>> {
    let key = prop::sample::select(vec!["a", "b"]).prop_map(String::from);
    let value = prop::sample::select(vec!["x", "y"]).prop_map(String::from);
    let input = prop_oneof![
        key.clone().prop_map(|key| KvInput::Get { key }),
        (key.clone(), value.clone()).prop_map(|(key, value)| KvInput::Put { key, value }),
        (key, value).prop_map(|(key, value)| KvInput::Append { key, value }),
    ];
    (
        prop::collection::vec(plan(input), 1..=7),
        prop::option::of((
            any::<Index>(),
            prop::sample::select(vec!["", "x", "y", "xy", "yx"]),
        )),
    )
        .prop_map(|(plans, corrupt)| {
            let mut store = std::collections::BTreeMap::<String, String>::new();
            let mut ops = history(plans, |input| families::kv_apply(&mut store, input));
            if let Some((index, seen)) = corrupt {
                let at = index.index(ops.len());
                let op = &mut ops[at];
                if let Some(KvOutput::Got(_)) = op.output {
                    op.output = Some(KvOutput::Got(seen.to_string()));
                }
            }
            ops
        })
}

/// Deterministic: a fixed seed (or `DIFFERENTIAL_SEED`), ChaCha, and no persistence files.
fn runner() -> TestRunner {
    let seed = match std::env::var("DIFFERENTIAL_SEED") {
        Ok(seed) => seed.parse().expect("DIFFERENTIAL_SEED is a u64"),
        Err(_) => SEED,
    };
    TestRunner::new(Config {
        cases: CASES,
        failure_persistence: None,
        rng_algorithm: RngAlgorithm::ChaCha,
        rng_seed: RngSeed::Fixed(seed),
        ..Config::default()
    })
}

/// The engine's verdict on `ops` is brute force's `expected` (an `Unknown` is a failure); a
/// linearizable one is counted in `linearizable`.
fn engine_agrees<M: Model>(
    model: &M,
    ops: &[Operation<M::Input, M::Output>],
    expected: bool,
    linearizable: &AtomicUsize,
) -> Result<(), TestCaseError> {
    let verdict = check(model, ops, Budget::default());
    match (&verdict, expected) {
        (Verdict::Linearizable, true) => {
            linearizable.fetch_add(1, Ordering::Relaxed);
            Ok(())
        }
        (Verdict::NotLinearizable(_), false) => Ok(()),
        _ => Err(TestCaseError::fail(format!(
            "the engine says {verdict:?}, brute force says linearizable={expected}"
        ))),
    }
}

/// Runs the engine and brute force on every generated history and requires the same verdict
/// (an `Unknown` from the engine is a failure); returns how many were linearizable.
fn differential<M: Model>(
    model: &M,
    histories: impl Strategy<Value = Vec<Operation<M::Input, M::Output>>>,
) -> usize
where
    M::Input: std::fmt::Debug,
    M::Output: std::fmt::Debug,
{
    let linearizable = AtomicUsize::new(0);
    let result = runner().run(&histories, |ops| {
        let expected = brute_force(model, &ops);
        engine_agrees(model, &ops, expected, &linearizable)
    });
    match result {
        Ok(()) => linearizable.into_inner(),
        Err(TestError::Fail(reason, ops)) => {
            panic!("{reason}\nminimal history: {ops:#?}")
        }
        Err(TestError::Abort(reason)) => panic!("aborted: {reason}"),
    }
}

/// Both verdicts are exercised, not just one: of `cases`, at least one in `one_in` is
/// linearizable and at least one in `one_in` is not.
fn both_verdicts(linearizable: usize, cases: u32, one_in: usize) {
    let all = cases as usize;
    assert!(
        linearizable >= all / one_in && all - linearizable >= all / one_in,
        "{linearizable} of {cases} linearizable"
    );
}

#[test]
fn the_engine_agrees_with_brute_force_on_small_register_histories() {
    // With [`SEED`], 8,388 of them are linearizable.
    let linearizable = differential(&CasRegister, register_histories());
    both_verdicts(linearizable, CASES, 20);
}

#[test]
fn the_engine_agrees_with_brute_force_on_small_kv_histories() {
    // With [`SEED`], 8,977 of them are linearizable.
    let linearizable = differential(&KvStore, kv_histories());
    both_verdicts(linearizable, CASES, 20);
}

/// Cases of each generated-family differential test (small: brute force is factorial).
const FAMILY_CASES: u32 = 1_000;

/// Small shapes of the generated worst-case families (`families.rs`): 1 to 4 clients, 1 to 6
/// ops, one in five `:info`, and a violation a third of the time in each place.
fn small_shapes() -> impl Strategy<Value = families::Shape> {
    (
        1..=4u64,
        1..=6usize,
        prop::option::of(prop::sample::select(families::Violation::ALL.to_vec())),
        any::<u64>(),
    )
        .prop_map(|(clients, ops, violation, seed)| families::Shape {
            clients,
            ops,
            info_per_mille: 200,
            violation,
            seed,
        })
}

/// A family's generator (`families::register`, `kv`, `ledger`).
type Generator<M> =
    fn(&families::Shape) -> Vec<Operation<<M as Model>::Input, <M as Model>::Output>>;

/// The engine and brute force agree on the small generated histories of one family, and a
/// history without injected violation is linearizable (the generator's promise); returns how
/// many were linearizable.
fn differential_family<M: Model>(model: &M, generate: Generator<M>) -> usize {
    let linearizable = AtomicUsize::new(0);
    let mut runner = runner();
    let config = Config {
        cases: FAMILY_CASES,
        ..runner.config().clone()
    };
    runner = TestRunner::new(config);
    let result = runner.run(&small_shapes(), |shape| {
        let ops = generate(&shape);
        let expected = brute_force(model, &ops);
        prop_assert!(
            expected || shape.violation.is_some(),
            "{shape:?} generated a violation"
        );
        engine_agrees(model, &ops, expected, &linearizable)
    });
    match result {
        Ok(()) => linearizable.into_inner(),
        Err(TestError::Fail(reason, shape)) => {
            panic!(
                "{reason}\nminimal shape: {shape:?}\nhistory: {:#?}",
                generate(&shape)
            )
        }
        Err(TestError::Abort(reason)) => panic!("aborted: {reason}"),
    }
}

#[test]
fn the_engine_agrees_with_brute_force_on_small_generated_register_families() {
    both_verdicts(
        differential_family(&CasRegister, families::register),
        FAMILY_CASES,
        10,
    );
}

#[test]
fn the_engine_agrees_with_brute_force_on_small_generated_kv_families() {
    both_verdicts(
        differential_family(&KvStore, families::kv),
        FAMILY_CASES,
        10,
    );
}

#[test]
fn the_engine_agrees_with_brute_force_on_small_generated_ledger_families() {
    both_verdicts(
        differential_family(&CasLedger, families::ledger),
        FAMILY_CASES,
        10,
    );
}
