//! Generated worst-case histories (issue 17): register, key-value and ledger histories of `C`
//! concurrent clients, many operations with an unknown outcome (Jepsen's `:info`), with or
//! without one injected violation early, in the middle or at the end. Shared by the check
//! benchmark (`benches/check.rs`, which includes this file) and the differential test.
//!
//! Deterministic: one ChaCha8 stream per family, from a fixed seed; probabilities are integer
//! ratios. Each client runs one operation at a time; an operation takes effect at a point
//! inside its interval, and the outputs are those of a correct object applying the operations
//! in the order of their points, so a history without injected violation is linearizable. A
//! client whose operation ends `:info` is replaced by a new process (as Jepsen does); the
//! operation took effect or not, half the time each. Times are event positions (the line
//! numbers of the Jepsen text written by [`etcd_text`] and [`kv_text`]), so the history and
//! its text agree. The injected violation is a read (register read, key-value get, ledger tip)
//! of a value never written, about 10%, 50% or 90% of the way through the history.

#![allow(dead_code)]

use std::collections::BTreeMap;

use leasesim::check::linearizability::Operation;
use leasesim::check::linearizability::kv::{KvInput, KvOutput};
use leasesim::check::linearizability::ledger::{LedgerCall, LedgerInput, LedgerOutput};
use leasesim::check::linearizability::register::{RegisterInput, RegisterOutput};
use rand_chacha::ChaCha8Rng;
use rand_core::{RngCore, SeedableRng};

/// Where a family's injected violation is, if it has one.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Violation {
    /// About 10% of the way through the history.
    Early,
    /// About half way.
    Middle,
    /// About 90% of the way.
    End,
}

impl Violation {
    /// The three places, in order.
    pub const ALL: [Violation; 3] = [Violation::Early, Violation::Middle, Violation::End];

    /// Per mille of the operations (in call order) before the injected read.
    fn per_mille(self) -> usize {
        match self {
            Violation::Early => 100,
            Violation::Middle => 500,
            Violation::End => 900,
        }
    }

    /// A short name for tables and file names.
    pub fn name(violation: Option<Violation>) -> &'static str {
        match violation {
            None => "ok",
            Some(Violation::Early) => "bad-early",
            Some(Violation::Middle) => "bad-middle",
            Some(Violation::End) => "bad-end",
        }
    }
}

/// The shape of one generated history.
#[derive(Clone, Copy, Debug)]
pub struct Shape {
    /// Concurrent clients.
    pub clients: u64,
    /// Operations.
    pub ops: usize,
    /// Operations with an unknown outcome, per mille.
    pub info_per_mille: u64,
    /// The injected violation, if any.
    pub violation: Option<Violation>,
    /// The ChaCha8 seed.
    pub seed: u64,
}

/// A register, key-value or ledger operation.
pub type RegisterOp = Operation<RegisterInput, RegisterOutput>;
/// A key-value operation.
pub type KvOp = Operation<KvInput, KvOutput>;
/// A ledger operation.
pub type LedgerOp = Operation<LedgerInput, LedgerOutput>;

/// Uniform in `0..n` (n small: the modulo bias is irrelevant here, and fixed).
fn below(rng: &mut ChaCha8Rng, n: u64) -> u64 {
    rng.next_u64() % n
}

/// Whether an event of `per_mille` chance happens.
fn chance(rng: &mut ChaCha8Rng, per_mille: u64) -> bool {
    below(rng, 1000) < per_mille
}

/// One operation's timing before its output is known.
#[derive(Clone, Copy, Debug)]
struct Slot {
    process: u64,
    /// Call and return in raw time; the point where it takes effect, if it does.
    call: u64,
    ret: u64,
    point: Option<u64>,
    info: bool,
}

/// Timings for `shape.ops` operations of `shape.clients` clients: each client calls again a
/// little after its previous operation returned (1 to 3 ticks); an operation lasts 1 to `2 · clients` ticks
/// (so about `clients` run at once); an `:info` one replaces its client's process.
fn timeline(shape: &Shape, rng: &mut ChaCha8Rng, may_be_info: impl Fn(usize) -> bool) -> Vec<Slot> {
    let clients = shape.clients.max(1);
    let mut free: Vec<(u64, u64)> = (0..clients).map(|c| (below(rng, clients), c)).collect();
    let mut next_process = clients;
    let mut slots = Vec::with_capacity(shape.ops);
    for i in 0..shape.ops {
        let (client, &(at, process)) = free
            .iter()
            .enumerate()
            .min_by_key(|&(c, &(at, _))| (at, c))
            .expect("at least one client");
        // Strictly after the client's previous return, so that its events stay in order.
        let call = at + 1 + below(rng, 3);
        let ret = call + 1 + below(rng, 2 * clients);
        let info = may_be_info(i) && chance(rng, shape.info_per_mille);
        let point = if info && chance(rng, 500) {
            None
        } else {
            Some(call + below(rng, ret - call + 1))
        };
        slots.push(Slot {
            process,
            call,
            ret,
            point,
            info,
        });
        free[client] = if info {
            next_process += 1;
            (ret, next_process - 1)
        } else {
            (ret, process)
        };
    }
    slots
}

/// Runs `apply(i)` on each op `i` that takes effect, in the order of the points (`points[i]`:
/// its point, `None` for never, and whether its outcome is unknown; ties in index order), as
/// a correct object would, and returns the outputs, `None` where the outcome is unknown.
pub fn outputs_by_point<O>(
    points: &[(Option<u64>, bool)],
    mut apply: impl FnMut(usize) -> O,
) -> Vec<Option<O>> {
    let mut order: Vec<usize> = (0..points.len())
        .filter(|&i| points[i].0.is_some())
        .collect();
    order.sort_by_key(|&i| (points[i].0, i));
    let mut outputs: Vec<Option<O>> = points.iter().map(|_| None).collect();
    for i in order {
        let output = apply(i);
        if !points[i].1 {
            outputs[i] = Some(output);
        }
    }
    outputs
}

/// Applies the operations in the order of their points with `apply(process, input)` (a correct
/// object, which may fill in the input from what the process saw before), and builds the
/// history: outputs for the known ones, times renumbered to event positions (calls before
/// returns at equal raw times; an `:info` op's return is where its `:info` line goes).
fn history<I, O>(
    slots: &[Slot],
    mut inputs: Vec<I>,
    mut apply: impl FnMut(u64, &mut I) -> O,
) -> Vec<Operation<I, O>> {
    let points: Vec<_> = slots.iter().map(|slot| (slot.point, slot.info)).collect();
    let outputs = outputs_by_point(&points, |i| apply(slots[i].process, &mut inputs[i]));
    let mut events: Vec<(u64, bool, usize)> = Vec::with_capacity(2 * slots.len());
    for (i, slot) in slots.iter().enumerate() {
        events.push((slot.call, false, i));
        events.push((slot.ret, true, i));
    }
    events.sort_unstable();
    let mut times = vec![(0, None); slots.len()];
    for (position, &(_, is_return, i)) in events.iter().enumerate() {
        let time = position as u64 + 1;
        if is_return {
            times[i].1 = Some(time);
        } else {
            times[i].0 = time;
        }
    }
    inputs
        .into_iter()
        .zip(outputs)
        .zip(slots.iter().zip(times))
        .map(|((input, output), (slot, (call, ret)))| Operation {
            process: slot.process,
            input,
            output,
            call,
            ret,
        })
        .collect()
}

/// The op at `violation`'s place (in call order) whose output `is_read` accepts, if any.
fn injection_point<I, O>(
    ops: &[Operation<I, O>],
    violation: Violation,
    is_read: impl Fn(&Operation<I, O>) -> bool,
) -> Option<usize> {
    let mut by_call: Vec<usize> = (0..ops.len()).collect();
    by_call.sort_by_key(|&i| ops[i].call);
    let from = ops.len() * violation.per_mille() / 1000;
    by_call[from..]
        .iter()
        .chain(by_call[..from].iter().rev())
        .copied()
        .find(|&i| ops[i].output.is_some() && is_read(&ops[i]))
}

/// A single compare-and-set register (etcd's): reads half the time, writes and cas of 0..5.
pub fn register(shape: &Shape) -> Vec<RegisterOp> {
    let mut rng = ChaCha8Rng::seed_from_u64(shape.seed);
    let slots = timeline(shape, &mut rng, |_| true);
    let inputs: Vec<RegisterInput> = (0..slots.len())
        .map(|_| match below(&mut rng, 4) {
            0 | 1 => RegisterInput::Read,
            2 => RegisterInput::Write(below(&mut rng, 5) as i64),
            _ => RegisterInput::Cas {
                old: below(&mut rng, 5) as i64,
                new: below(&mut rng, 5) as i64,
            },
        })
        .collect();
    let mut value: Option<i64> = None;
    let mut ops = history(&slots, inputs, |_, input| register_apply(&mut value, input));
    if let Some(violation) = shape.violation
        && let Some(at) = injection_point(&ops, violation, |op| op.input == RegisterInput::Read)
    {
        ops[at].output = Some(RegisterOutput::Read(Some(9)));
    }
    ops
}

/// `n` reads of the never-written register, one after the other, by processes `i % 4`: each
/// is a twin of every earlier one (the worst case of the equal-operation pruning).
pub fn equal_reads(n: u64) -> Vec<RegisterOp> {
    (0..n)
        .map(|i| Operation {
            process: i % 4,
            input: RegisterInput::Read,
            output: Some(RegisterOutput::Read(None)),
            call: 2 * i,
            ret: Some(2 * i + 1),
        })
        .collect()
}

/// A compare-and-set register run sequentially: applies `input` to `value` and returns
/// what the register answers. Written apart from the checker's model, which only judges
/// answers, so the generated histories do not share its mistakes.
pub fn register_apply(value: &mut Option<i64>, input: &RegisterInput) -> RegisterOutput {
    match *input {
        RegisterInput::Read => RegisterOutput::Read(*value),
        RegisterInput::Write(v) => {
            *value = Some(v);
            RegisterOutput::Written
        }
        RegisterInput::Cas { old, new } => {
            let swapped = *value == Some(old);
            if swapped {
                *value = Some(new);
            }
            RegisterOutput::Cas(swapped)
        }
    }
}

/// A key-value store run sequentially: applies `input` to `store` and returns what the store
/// answers (a missing key reads as empty). Written apart from the checker's model, as
/// [`register_apply`] is.
pub fn kv_apply(store: &mut BTreeMap<String, String>, input: &KvInput) -> KvOutput {
    match input {
        KvInput::Get { key } => KvOutput::Got(store.get(key).cloned().unwrap_or_default()),
        KvInput::Put { key, value } => {
            store.insert(key.clone(), value.clone());
            KvOutput::Done
        }
        KvInput::Append { key, value } => {
            store.entry(key.clone()).or_default().push_str(value);
            KvOutput::Done
        }
    }
}

/// Keys of the key-value family.
pub const KV_KEYS: u64 = 10;

/// A key-value store of [`KV_KEYS`] keys, as porcupine's test data: gets (never `:info`: a
/// timed-out get is dropped), puts and appends of unique values `x <process> <n> y`.
pub fn kv(shape: &Shape) -> Vec<KvOp> {
    let mut rng = ChaCha8Rng::seed_from_u64(shape.seed);
    let kinds: Vec<u64> = (0..shape.ops).map(|_| below(&mut rng, 4)).collect();
    let slots = timeline(shape, &mut rng, |i| kinds[i] != 0);
    let inputs: Vec<KvInput> = slots
        .iter()
        .zip(&kinds)
        .enumerate()
        .map(|(n, (slot, kind))| {
            let key = below(&mut rng, KV_KEYS).to_string();
            let value = format!("x {} {n} y", slot.process);
            match kind {
                0 => KvInput::Get { key },
                1 => KvInput::Put { key, value },
                _ => KvInput::Append { key, value },
            }
        })
        .collect();
    let mut store = BTreeMap::<String, String>::new();
    let mut ops = history(&slots, inputs, |_, input| kv_apply(&mut store, input));
    if let Some(violation) = shape.violation
        && let Some(at) = injection_point(&ops, violation, |op| {
            matches!(op.input, KvInput::Get { .. })
        })
    {
        ops[at].output = Some(KvOutput::Got("x never written y".into()));
    }
    ops
}

/// Sessions (partitions) of the ledger family.
pub const LEDGER_SESSIONS: u64 = 4;

/// A compare-and-set ledger of [`LEDGER_SESSIONS`] sessions: a third of the ops read the tip,
/// the rest append at the tip their process last saw on that session (so appends race and
/// conflict). An append's `may_commit` is whether it is in the final ledger: it took effect
/// and did not conflict.
pub fn ledger(shape: &Shape) -> Vec<LedgerOp> {
    let mut rng = ChaCha8Rng::seed_from_u64(shape.seed);
    let slots = timeline(shape, &mut rng, |_| true);
    let inputs: Vec<LedgerInput> = (0..slots.len())
        .map(|n| {
            let session = format!("s{}", below(&mut rng, LEDGER_SESSIONS));
            let call = if below(&mut rng, 3) == 0 {
                LedgerCall::Tip
            } else {
                LedgerCall::Append {
                    expected: 0,
                    record: format!("r{n}"),
                    may_commit: false,
                }
            };
            LedgerInput { session, call }
        })
        .collect();
    let mut tips = std::collections::BTreeMap::<String, u64>::new();
    let mut seen = std::collections::BTreeMap::<(u64, String), u64>::new();
    let mut ops = history(&slots, inputs, |process, input| {
        let tip = tips.entry(input.session.clone()).or_default();
        let seen = seen.entry((process, input.session.clone())).or_default();
        let output = match &mut input.call {
            LedgerCall::Tip => LedgerOutput::Tip(*tip),
            LedgerCall::Append {
                expected,
                may_commit,
                ..
            } => {
                *expected = *seen;
                *may_commit = *expected == *tip;
                if *may_commit {
                    *tip += 1;
                    LedgerOutput::Appended(*tip)
                } else {
                    LedgerOutput::Conflict { actual: *tip }
                }
            }
        };
        *seen = *tip;
        output
    });
    if let Some(violation) = shape.violation
        && let Some(at) = injection_point(&ops, violation, |op| op.input.call == LedgerCall::Tip)
    {
        ops[at].output = Some(LedgerOutput::Tip(1_000_000));
    }
    ops
}

/// Events of a history in time order: `(time, is_return, op)`; an op without return time has
/// only its call (for an op with an unknown outcome, the return is its `:info` line).
fn events<I, O>(ops: &[Operation<I, O>]) -> Vec<(u64, bool, usize)> {
    let mut events = Vec::with_capacity(2 * ops.len());
    for (i, op) in ops.iter().enumerate() {
        events.push((op.call, false, i));
        if let Some(ret) = op.ret {
            events.push((ret, true, i));
        }
    }
    events.sort_unstable();
    events
}

/// The register history as a Jepsen etcd log (the format `leasesim check --model etcd` and
/// porcupine's `parseJepsenLog` read).
pub fn etcd_text(ops: &[RegisterOp]) -> String {
    let mut text = String::new();
    for (_, is_return, i) in events(ops) {
        let op = &ops[i];
        let (f, value) = match op.input {
            RegisterInput::Read => (":read", "nil".to_string()),
            RegisterInput::Write(v) => (":write", v.to_string()),
            RegisterInput::Cas { old, new } => (":cas", format!("[{old} {new}]")),
        };
        let (kind, value) = match (is_return, &op.output) {
            (false, _) => (":invoke", value),
            (true, None) => (":info", ":timed-out".to_string()),
            (true, Some(RegisterOutput::Read(v))) => {
                (":ok", v.map_or("nil".to_string(), |v| v.to_string()))
            }
            (true, Some(RegisterOutput::Cas(false))) => (":fail", value),
            (true, Some(_)) => (":ok", value),
        };
        text.push_str(&format!(
            "INFO  jepsen.util - {}\t{kind}\t{f}\t{value}\n",
            op.process
        ));
    }
    text
}

/// The key-value history in porcupine's test-data format (the format `leasesim check --model
/// kv` and porcupine's `parseKvLog` read).
pub fn kv_text(ops: &[KvOp]) -> String {
    let mut text = String::new();
    for (_, is_return, i) in events(ops) {
        let op = &ops[i];
        let (f, key, value) = match &op.input {
            KvInput::Get { key } => (":get", key, None),
            KvInput::Put { key, value } => (":put", key, Some(value)),
            KvInput::Append { key, value } => (":append", key, Some(value)),
        };
        let (kind, value) = match (is_return, &op.output) {
            (false, _) => (":invoke", value.cloned()),
            (true, None) => (":info", value.cloned()),
            (true, Some(KvOutput::Got(seen))) => (":ok", Some(seen.clone())),
            (true, Some(_)) => (":ok", value.cloned()),
        };
        let value = value.map_or("nil".to_string(), |v| format!("{v:?}"));
        text.push_str(&format!(
            "{{:process {}, :type {kind}, :f {f}, :key {key:?}, :value {value}}}\n",
            op.process
        ));
    }
    text
}
