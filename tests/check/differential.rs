//! Differential test: the engine against a brute-force checker that tries every ordering of
//! the operations that respects real time (and every subset of the unknown-outcome operations),
//! on 10,000 small random register and key-value histories drawn from fixed ChaCha seeds.

use rand_chacha::ChaCha8Rng;
use rand_core::{RngCore, SeedableRng};

use leasesim::check::linearizability::kv::{KvInput, KvOutput, KvStore};
use leasesim::check::linearizability::register::{CasRegister, RegisterInput, RegisterOutput};
use leasesim::check::linearizability::{Budget, Model, Operation, Verdict, check};

const CASES: u64 = 10_000;

fn below(rng: &mut ChaCha8Rng, n: u64) -> u64 {
    rng.next_u64() % n
}

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

/// Times and a linearization point for each of `n` ops; unknown ones may take effect late or
/// never (`None`).
fn timing(rng: &mut ChaCha8Rng, unknown: bool) -> (u64, u64, Option<u64>) {
    let call = below(rng, 20);
    let ret = call + below(rng, 6);
    let point = if unknown {
        (below(rng, 2) == 0).then(|| call + below(rng, 12))
    } else {
        Some(call + below(rng, ret - call + 1))
    };
    (call, ret, point)
}

/// Runs ops in the order of their points and records what a correct object would return; then
/// perhaps corrupts one output.
fn register_history(rng: &mut ChaCha8Rng) -> Vec<Operation<RegisterInput, RegisterOutput>> {
    let n = 1 + below(rng, 6) as usize;
    let mut ops = Vec::new();
    let mut points = Vec::new();
    for process in 0..n as u64 {
        let unknown = below(rng, 5) == 0;
        let (call, ret, point) = timing(rng, unknown);
        let input = match below(rng, 3) {
            0 => RegisterInput::Read,
            1 => RegisterInput::Write(below(rng, 3) as i64),
            _ => RegisterInput::Cas {
                old: below(rng, 3) as i64,
                new: below(rng, 3) as i64,
            },
        };
        ops.push(Operation {
            process,
            input,
            output: None,
            call,
            ret: Some(ret),
        });
        points.push((point, unknown));
    }
    let mut order: Vec<usize> = (0..n).filter(|&i| points[i].0.is_some()).collect();
    order.sort_by_key(|&i| (points[i].0, i));
    let mut state: Option<i64> = None;
    for i in order {
        let output = match ops[i].input {
            RegisterInput::Read => RegisterOutput::Read(state),
            RegisterInput::Write(v) => {
                state = Some(v);
                RegisterOutput::Written
            }
            RegisterInput::Cas { old, new } => {
                let swapped = state == Some(old);
                if swapped {
                    state = Some(new);
                }
                RegisterOutput::Cas(swapped)
            }
        };
        if !points[i].1 {
            ops[i].output = Some(output);
        }
    }
    if below(rng, 2) == 0 {
        let i = below(rng, n as u64) as usize;
        if ops[i].output.is_some() {
            ops[i].output = Some(match ops[i].input {
                RegisterInput::Read => {
                    RegisterOutput::Read([None, Some(0), Some(1), Some(2)][below(rng, 4) as usize])
                }
                RegisterInput::Write(_) => RegisterOutput::Written,
                RegisterInput::Cas { .. } => RegisterOutput::Cas(below(rng, 2) == 0),
            });
        }
    }
    ops
}

fn kv_history(rng: &mut ChaCha8Rng) -> Vec<Operation<KvInput, KvOutput>> {
    let n = 1 + below(rng, 7) as usize;
    let mut ops = Vec::new();
    let mut points = Vec::new();
    for process in 0..n as u64 {
        let unknown = below(rng, 5) == 0;
        let (call, ret, point) = timing(rng, unknown);
        let key = ["a", "b"][below(rng, 2) as usize].to_string();
        let value = ["x", "y"][below(rng, 2) as usize].to_string();
        let input = match below(rng, 3) {
            0 => KvInput::Get { key },
            1 => KvInput::Put { key, value },
            _ => KvInput::Append { key, value },
        };
        ops.push(Operation {
            process,
            input,
            output: None,
            call,
            ret: Some(ret),
        });
        points.push((point, unknown));
    }
    let mut order: Vec<usize> = (0..n).filter(|&i| points[i].0.is_some()).collect();
    order.sort_by_key(|&i| (points[i].0, i));
    let mut store = std::collections::BTreeMap::<String, String>::new();
    for i in order {
        let output = match &ops[i].input {
            KvInput::Get { key } => KvOutput::Got(store.get(key).cloned().unwrap_or_default()),
            KvInput::Put { key, value } => {
                store.insert(key.clone(), value.clone());
                KvOutput::Done
            }
            KvInput::Append { key, value } => {
                store.entry(key.clone()).or_default().push_str(value);
                KvOutput::Done
            }
        };
        if !points[i].1 {
            ops[i].output = Some(output);
        }
    }
    if below(rng, 2) == 0 {
        let i = below(rng, n as u64) as usize;
        if let Some(KvOutput::Got(_)) = ops[i].output {
            let seen = ["", "x", "y", "xy", "yx"][below(rng, 5) as usize].to_string();
            ops[i].output = Some(KvOutput::Got(seen));
        }
    }
    ops
}

fn agree<M: Model>(model: &M, ops: &[Operation<M::Input, M::Output>], seed: u64) -> bool {
    let expected = brute_force(model, ops);
    let verdict = check(model, ops, Budget::default());
    match (&verdict, expected) {
        (Verdict::Linearizable, true) | (Verdict::NotLinearizable(_), false) => expected,
        _ => panic!(
            "seed {seed}: the engine says {verdict:?}, brute force says linearizable={expected}, \
             for {ops:#?}\nreplay: DIFFERENTIAL_SEED={seed} cargo test --test check differential"
        ),
    }
}

fn seeds() -> Vec<u64> {
    match std::env::var("DIFFERENTIAL_SEED") {
        Ok(seed) => vec![seed.parse().expect("DIFFERENTIAL_SEED is a u64")],
        Err(_) => (0..CASES).collect(),
    }
}

#[test]
fn the_engine_agrees_with_brute_force_on_small_register_histories() {
    let linearizable = seeds()
        .into_iter()
        .filter(|&seed| {
            let ops = register_history(&mut ChaCha8Rng::seed_from_u64(seed));
            agree(&CasRegister, &ops, seed)
        })
        .count();
    // Both verdicts are exercised, not just one.
    assert!(
        seeds().len() == 1 || (linearizable > 1000 && linearizable < 9000),
        "{linearizable}"
    );
}

#[test]
fn the_engine_agrees_with_brute_force_on_small_kv_histories() {
    let linearizable = seeds()
        .into_iter()
        .filter(|&seed| {
            let ops = kv_history(&mut ChaCha8Rng::seed_from_u64(seed ^ 0x6b76));
            agree(&KvStore, &ops, seed)
        })
        .count();
    assert!(
        seeds().len() == 1 || (linearizable > 1000 && linearizable < 9000),
        "{linearizable}"
    );
}
