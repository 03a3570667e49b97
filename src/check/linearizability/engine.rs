//! The Wing–Gong–Lowe search over one partition, and the partitioning around it.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

use super::Model;
use super::memo::Memo;

/// One operation of a concurrent history.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Operation<I, O> {
    /// The client (process) that issued it.
    pub process: u64,
    /// What was called.
    pub input: I,
    /// What was returned; `None` when the outcome is unknown (it may or may not take effect).
    pub output: Option<O>,
    /// Invocation time.
    pub call: u64,
    /// Return time; `None` is +∞ (never returned). Ignored when `output` is `None`: an operation
    /// with an unknown outcome may still take effect later, so its return time is +∞.
    pub ret: Option<u64>,
}

/// How much search a check may spend before it answers [`Verdict::Unknown`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Budget {
    /// Search steps (one step = one try to place or to take back an operation) per partition.
    pub max_steps_per_partition: u64,
}

impl Budget {
    /// A budget of `max_steps_per_partition` search steps for each partition.
    pub fn steps(max_steps_per_partition: u64) -> Self {
        Self {
            max_steps_per_partition,
        }
    }
}

impl Default for Budget {
    /// 50 million steps per partition: a few seconds at most.
    fn default() -> Self {
        Self::steps(50_000_000)
    }
}

/// The outcome of a check.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Every partition has a linearization.
    Linearizable,
    /// Some partition has none; the explanation shows where the search got stuck.
    NotLinearizable(Box<Explanation>),
    /// The budget ran out before an answer and no violation was found.
    Unknown,
}

/// Why a history is not linearizable, in plain words.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Explanation {
    /// The partition (key) that has no linearization.
    pub partition: String,
    /// Index (in the checked slice) of the operation that cannot be placed.
    pub stuck_index: usize,
    /// That operation: process, times, input and output.
    pub stuck: String,
    /// The states possible just before it, each with why the operation cannot go on from it.
    pub states_before: Vec<String>,
    /// The longest valid prefix the search found, in linearization order.
    pub longest_prefix: Vec<String>,
}

impl fmt::Display for Explanation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "partition {}: cannot place {}",
            self.partition, self.stuck
        )?;
        writeln!(f, "  states possible just before it:")?;
        for state in &self.states_before {
            writeln!(f, "    {state}")?;
        }
        writeln!(
            f,
            "  longest valid prefix ({} ops):",
            self.longest_prefix.len()
        )?;
        for (i, op) in self.longest_prefix.iter().enumerate() {
            writeln!(f, "    {i}: {op}")?;
        }
        Ok(())
    }
}

/// Checks `ops` against `model`, one partition at a time in key order.
///
/// A violation found in any partition is reported (the first in key order); otherwise a
/// partition that ran out of budget makes the verdict [`Verdict::Unknown`].
pub fn check<M: Model>(
    model: &M,
    ops: &[Operation<M::Input, M::Output>],
    budget: Budget,
) -> Verdict {
    let mut partitions: BTreeMap<M::Key, Vec<usize>> = BTreeMap::new();
    for (i, op) in ops.iter().enumerate() {
        partitions.entry(model.key(&op.input)).or_default().push(i);
    }
    let mut out_of_budget = false;
    for (key, indices) in &partitions {
        let mut search = Search::new(model, ops, indices);
        match search.run(budget.max_steps_per_partition) {
            Outcome::Linearizable => {}
            Outcome::OutOfBudget => out_of_budget = true,
            Outcome::Stuck => {
                return Verdict::NotLinearizable(Box::new(search.explain(format!("{key:?}"))));
            }
        }
    }
    if out_of_budget {
        Verdict::Unknown
    } else {
        Verdict::Linearizable
    }
}

/// Effective return time: +∞ for an unknown outcome.
fn return_time<I, O>(op: &Operation<I, O>) -> u64 {
    match (&op.output, op.ret) {
        (Some(_), Some(ret)) => ret,
        _ => u64::MAX,
    }
}

/// Pruning of equivalent operations: for each op `b`, the latest op `a` before it in (call,
/// return) order with the same input and output whose interval `a` is dominated by `b`'s
/// (`a.call <= b.call`, `a.ret <= b.ret`). Any linearization placing `b` before `a` stays valid
/// with the two swapped, so the search only places `b` once `a` is placed.
fn twins<I: PartialEq, O: PartialEq>(
    ops: &[Operation<I, O>],
    indices: &[usize],
) -> Vec<Option<usize>> {
    let mut order: Vec<usize> = (0..indices.len()).collect();
    let key = |l: usize| (ops[indices[l]].call, return_time(&ops[indices[l]]), l);
    order.sort_by_key(|&l| key(l));
    let mut twin_before = vec![None; indices.len()];
    for (position, &b) in order.iter().enumerate() {
        let (op_b, ret_b) = (&ops[indices[b]], return_time(&ops[indices[b]]));
        twin_before[b] = order[..position].iter().rev().copied().find(|&a| {
            let op_a = &ops[indices[a]];
            return_time(op_a) <= ret_b && op_a.input == op_b.input && op_a.output == op_b.output
        });
    }
    twin_before
}

/// How one partition's search ended.
enum Outcome {
    Linearizable,
    Stuck,
    OutOfBudget,
}

const NIL: usize = usize::MAX;
const HEAD: usize = 0;

/// The search state for one partition: a doubly linked list of call and return events (node 0
/// is the head), as in Lowe's algorithm.
struct Search<'a, M: Model> {
    model: &'a M,
    ops: &'a [Operation<M::Input, M::Output>],
    /// Partition-local op number → index into `ops`.
    indices: &'a [usize],
    prev: Vec<usize>,
    next: Vec<usize>,
    /// Node → partition-local op number.
    node_op: Vec<usize>,
    /// Call node → its return node; `NIL` for return nodes.
    matching: Vec<usize>,
    /// Local op → an equivalent op that may be placed first without loss (see [`twins`]).
    twin_before: Vec<Option<usize>>,
    stuck: Option<Stuck<M::State>>,
    longest_prefix: Vec<usize>,
}

/// The deepest point where the search had to take an operation back.
struct Stuck<S> {
    depth: usize,
    op: usize,
    states: BTreeSet<S>,
}

impl<'a, M: Model> Search<'a, M> {
    fn new(model: &'a M, ops: &'a [Operation<M::Input, M::Output>], indices: &'a [usize]) -> Self {
        let events = Self::events(ops, indices);
        let nodes = events.len() + 1;
        let mut search = Search {
            model,
            ops,
            indices,
            prev: (0..nodes).map(|n| n.wrapping_sub(1)).collect(),
            next: (1..=nodes)
                .map(|n| if n == nodes { NIL } else { n })
                .collect(),
            node_op: vec![NIL; nodes],
            matching: vec![NIL; nodes],
            twin_before: twins(ops, indices),
            stuck: None,
            longest_prefix: Vec::new(),
        };
        let mut call_node = vec![NIL; indices.len()];
        for (position, &(_, is_return, op)) in events.iter().enumerate() {
            let node = position + 1;
            search.node_op[node] = op;
            if is_return {
                search.matching[call_node[op]] = node;
            } else {
                call_node[op] = node;
            }
        }
        search
    }

    /// Call and return events `(time, is_return, local op)`, in time order; calls before returns
    /// at equal times (so such operations count as concurrent).
    fn events(
        ops: &[Operation<M::Input, M::Output>],
        indices: &[usize],
    ) -> Vec<(u64, bool, usize)> {
        let mut events = Vec::with_capacity(indices.len() * 2);
        for (local, &i) in indices.iter().enumerate() {
            let op = &ops[i];
            let ret = return_time(op);
            events.push((op.call, false, local));
            events.push((ret, true, local));
        }
        events.sort_unstable();
        events
    }

    fn op(&self, local: usize) -> &'a Operation<M::Input, M::Output> {
        &self.ops[self.indices[local]]
    }

    fn unlink(&mut self, node: usize) {
        let (p, n) = (self.prev[node], self.next[node]);
        self.next[p] = n;
        if n != NIL {
            self.prev[n] = p;
        }
    }

    fn relink(&mut self, node: usize) {
        let (p, n) = (self.prev[node], self.next[node]);
        self.next[p] = node;
        if n != NIL {
            self.prev[n] = node;
        }
    }

    /// Removes a call node and its return node.
    fn lift(&mut self, call: usize) {
        self.unlink(call);
        self.unlink(self.matching[call]);
    }

    /// Undoes [`Self::lift`] (in reverse order).
    fn unlift(&mut self, call: usize) {
        self.relink(self.matching[call]);
        self.relink(call);
    }

    fn run(&mut self, max_steps: u64) -> Outcome {
        let words = self.indices.len().div_ceil(64);
        let mut linearized = vec![0u64; words];
        let mut cache = Memo::new(words);
        let mut calls: Vec<(usize, M::State)> = Vec::new();
        let mut known_left = self
            .indices
            .iter()
            .filter(|&&i| self.ops[i].output.is_some())
            .count();
        let mut state = self.model.init();
        let mut entry = self.next[HEAD];
        let mut steps = 0u64;
        while known_left > 0 {
            if steps >= max_steps {
                return Outcome::OutOfBudget;
            }
            steps += 1;
            if entry != NIL && self.matching[entry] != NIL {
                let local = self.node_op[entry];
                let op = self.op(local);
                let twin_waits = self.twin_before[local]
                    .is_some_and(|twin| linearized[twin / 64] & (1 << (twin % 64)) == 0);
                let next = if twin_waits {
                    None
                } else {
                    // An unknown-outcome op that would leave the state as it is can as well not
                    // take effect at all, which the early stop already allows: skip it.
                    self.model
                        .step(&state, &op.input, op.output.as_ref())
                        .filter(|next| op.output.is_some() || *next != state)
                };
                if let Some(next_state) = next {
                    linearized[local / 64] |= 1 << (local % 64);
                    if cache.insert(&linearized, &next_state) {
                        calls.push((entry, std::mem::replace(&mut state, next_state)));
                        self.lift(entry);
                        known_left -= usize::from(op.output.is_some());
                        self.note_prefix(&calls);
                        entry = self.next[HEAD];
                        continue;
                    }
                    linearized[local / 64] &= !(1 << (local % 64));
                }
                entry = self.next[entry];
            } else {
                let Some((call, previous)) = calls.pop() else {
                    self.note_stuck(entry, 0, &state);
                    return Outcome::Stuck;
                };
                self.note_stuck(entry, calls.len() + 1, &state);
                state = previous;
                let local = self.node_op[call];
                linearized[local / 64] &= !(1 << (local % 64));
                self.unlift(call);
                known_left += usize::from(self.op(local).output.is_some());
                entry = self.next[call];
            }
        }
        Outcome::Linearizable
    }

    fn note_prefix(&mut self, calls: &[(usize, M::State)]) {
        if calls.len() > self.longest_prefix.len() {
            self.longest_prefix = calls.iter().map(|&(node, _)| self.node_op[node]).collect();
        }
    }

    /// Records that the return `node` was reached with `depth` operations placed in `state`.
    fn note_stuck(&mut self, node: usize, depth: usize, state: &M::State) {
        if node == NIL {
            return;
        }
        let op = self.node_op[node];
        match &mut self.stuck {
            Some(stuck) if stuck.depth > depth => {}
            Some(stuck) if stuck.depth == depth && stuck.op == op => {
                stuck.states.insert(state.clone());
            }
            Some(stuck) if stuck.depth == depth => {}
            _ => {
                self.stuck = Some(Stuck {
                    depth,
                    op,
                    states: BTreeSet::from([state.clone()]),
                });
            }
        }
    }

    fn describe(&self, local: usize) -> String {
        let op = self.op(local);
        let ret = match (&op.output, op.ret) {
            (Some(_), Some(ret)) => ret.to_string(),
            _ => "∞".to_string(),
        };
        format!(
            "process {} [{}, {}]: {}",
            op.process,
            op.call,
            ret,
            self.model.describe_op(&op.input, op.output.as_ref())
        )
    }

    fn describe_state_before(&self, state: &M::State, local: usize) -> String {
        let op = self.op(local);
        let why = match self.model.step(state, &op.input, op.output.as_ref()) {
            None => "the model rejects the operation here".to_string(),
            Some(next) => format!(
                "the model accepts it (-> {}), but no linearization of the rest follows",
                self.model.describe_state(&next)
            ),
        };
        format!("{}: {why}", self.model.describe_state(state))
    }

    fn explain(&self, partition: String) -> Explanation {
        const MAX_STATES: usize = 16;
        let stuck = self
            .stuck
            .as_ref()
            .expect("a stuck search recorded where it got stuck");
        Explanation {
            partition,
            stuck_index: self.indices[stuck.op],
            stuck: self.describe(stuck.op),
            states_before: stuck
                .states
                .iter()
                .take(MAX_STATES)
                .map(|s| self.describe_state_before(s, stuck.op))
                .collect(),
            longest_prefix: self
                .longest_prefix
                .iter()
                .map(|&l| self.describe(l))
                .collect(),
        }
    }
}
