//! The Wing–Gong–Lowe search over one partition, and the partitioning around it.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};

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
    /// Search steps (one step = one try to place or to take back an operation, or one
    /// comparison of the equivalent-operation pruning that runs before the search) per
    /// partition.
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

/// Why a history is not linearizable, in plain words (the model's [`Model::describe_op`],
/// [`Model::describe_state`], [`Model::describe_rejection`] and
/// [`Model::describe_possible_states`]). Times are the history's own (for the Jepsen readers,
/// line numbers); `∞` marks an operation whose outcome is unknown. [`fmt::Display`] renders it
/// as a few indented lines.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
#[non_exhaustive]
pub struct Explanation {
    /// The partition (key, `Debug`-formatted; `()` for a single object) that has no
    /// linearization.
    pub partition: String,
    /// One sentence: the operation that cannot be placed and the states possible before it,
    /// e.g. "process 3 read 4 at [12, 15], but the register could only hold 1 or 2 then".
    pub summary: String,
    /// Index (in the checked slice) of the operation that cannot be placed.
    pub stuck_index: usize,
    /// That operation's process.
    pub stuck_process: u64,
    /// That operation's invocation time.
    pub stuck_call: u64,
    /// That operation's return time; `None` when its outcome is unknown (+∞).
    pub stuck_return: Option<u64>,
    /// That operation in plain words: process, what it called and got back, `[call, return]`.
    pub stuck: String,
    /// How many operations of the partition were placed (linearized) just before it, at the
    /// deepest point the search reached.
    pub placed_before: usize,
    /// The states possible just before it (at that deepest point), each with why the operation
    /// cannot go on from it: "<state>: <reason>". At most 16; see `states_omitted`.
    pub states_before: Vec<String>,
    /// How many more states were possible than `states_before` lists.
    pub states_omitted: usize,
    /// The longest valid prefix the search found, in linearization order: each operation in
    /// plain words, then `->` and the state it leaves.
    pub longest_prefix: Vec<String>,
    /// The same prefix as indices into the checked slice.
    pub longest_prefix_indices: Vec<usize>,
}

impl fmt::Display for Explanation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "{}.", self.summary)?;
        if self.partition != "()" {
            writeln!(f, "  partition: {}", self.partition)?;
        }
        writeln!(
            f,
            "  the operation that cannot be placed is #{} of the history: {}",
            self.stuck_index, self.stuck
        )?;
        writeln!(
            f,
            "  states possible just before it (with {} earlier {} placed), and why none admits it:",
            self.placed_before,
            plural(self.placed_before, "operation", "operations")
        )?;
        for state in &self.states_before {
            writeln!(f, "    {state}")?;
        }
        if self.states_omitted > 0 {
            writeln!(f, "    … and {} more", self.states_omitted)?;
        }
        writeln!(
            f,
            "  longest valid prefix, in linearization order ({} {}):",
            self.longest_prefix.len(),
            plural(self.longest_prefix.len(), "operation", "operations")
        )?;
        for (i, op) in self.longest_prefix.iter().enumerate() {
            writeln!(f, "    {:>3}. {op}", i + 1)?;
        }
        Ok(())
    }
}

fn plural<'a>(n: usize, one: &'a str, many: &'a str) -> &'a str {
    if n == 1 { one } else { many }
}

/// Checks `ops` against `model`, partition by partition ([`Model::key`]).
///
/// Partitions are searched in parallel: at most [`std::thread::available_parallelism`] scoped
/// threads (the calling thread among them) take partitions in key order from a shared queue; a
/// history with a single partition is searched on the calling thread alone. The verdict does
/// not depend on thread timing: a violation is reported from the first failing partition in key
/// order (partitions after a failing one may be abandoned, as they cannot change the verdict),
/// and [`Verdict::Unknown`] is returned only when no partition fails and one ran out of budget.
///
/// The model and the operations are shared between the threads, hence the `Sync` bounds of
/// [`Model`].
pub fn check<M: Model>(
    model: &M,
    ops: &[Operation<M::Input, M::Output>],
    budget: Budget,
) -> Verdict {
    check_counted(model, ops, budget).0
}

/// [`check`], and the work it counted against the budget: search steps and pruning
/// comparisons, summed over the partitions searched (each at most
/// `budget.max_steps_per_partition`). With several partitions on several threads, a partition
/// abandoned after another failed counts what it spent, so only the verdict is deterministic
/// then.
pub fn check_counted<M: Model>(
    model: &M,
    ops: &[Operation<M::Input, M::Output>],
    budget: Budget,
) -> (Verdict, u64) {
    let spent = AtomicU64::new(0);
    let verdict = check_spending(model, ops, budget, &spent);
    (verdict, spent.into_inner())
}

fn check_spending<M: Model>(
    model: &M,
    ops: &[Operation<M::Input, M::Output>],
    budget: Budget,
    spent: &AtomicU64,
) -> Verdict {
    let mut by_key: BTreeMap<M::Key, Vec<usize>> = BTreeMap::new();
    for (i, op) in ops.iter().enumerate() {
        by_key.entry(model.key(&op.input)).or_default().push(i);
    }
    let (keys, partitions): (Vec<M::Key>, Vec<Vec<usize>>) = by_key.into_iter().unzip();
    debug_assert_eq!(
        partitions.iter().map(Vec::len).sum::<usize>(),
        ops.len(),
        "the partitions split the operations, each into one"
    );
    let workers = if partitions.len() > 1 {
        parallelism().min(partitions.len())
    } else {
        1
    };
    let results = if workers <= 1 {
        check_in_order(model, ops, &partitions, budget, spent)
    } else {
        check_in_parallel(model, ops, &partitions, budget, workers, spent)
    };
    let mut out_of_budget = false;
    for (key, result) in keys.iter().zip(results) {
        match result {
            Some(PartitionResult::Linearizable) => {}
            Some(PartitionResult::OutOfBudget) => out_of_budget = true,
            Some(PartitionResult::Stuck(mut explanation)) => {
                explanation.partition = format!("{key:?}");
                return Verdict::NotLinearizable(explanation);
            }
            // Abandoned because an earlier partition failed: unreachable here, as that
            // partition's result comes first.
            None => {}
        }
    }
    if out_of_budget {
        Verdict::Unknown
    } else {
        Verdict::Linearizable
    }
}

/// [`std::thread::available_parallelism`], read once per process (it reads cgroup files on
/// Linux, tens of microseconds: as long as checking a small history).
fn parallelism() -> usize {
    static PARALLELISM: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    *PARALLELISM.get_or_init(|| std::thread::available_parallelism().map_or(1, usize::from))
}

/// What one partition's search found; an explanation's `partition` is filled in by [`check`].
enum PartitionResult {
    Linearizable,
    Stuck(Box<Explanation>),
    OutOfBudget,
}

/// Searches the partitions one by one on the calling thread, stopping at the first failure;
/// `None` for the partitions not searched.
fn check_in_order<M: Model>(
    model: &M,
    ops: &[Operation<M::Input, M::Output>],
    partitions: &[Vec<usize>],
    budget: Budget,
    spent: &AtomicU64,
) -> Vec<Option<PartitionResult>> {
    let mut results: Vec<Option<PartitionResult>> = Vec::with_capacity(partitions.len());
    for indices in partitions {
        let result = check_partition(model, ops, indices, budget, &|_| false, spent);
        let stuck = matches!(result, Some(PartitionResult::Stuck(_)));
        results.push(result);
        if stuck {
            break;
        }
    }
    results.resize_with(partitions.len(), || None);
    results
}

/// Searches the partitions on up to `workers` threads pulling from a shared queue in key order.
/// The calling thread starts alone and starts `workers - 1` scoped helpers only once it has
/// spent [`SPAWN_HELPERS_AFTER_STEPS`] search steps, so that histories of many tiny partitions
/// do not pay for threads. A partition after the first known failure is skipped or abandoned;
/// every partition before it is searched to the end, so the first failing partition in key
/// order is always found, whatever the threads do.
fn check_in_parallel<M: Model>(
    model: &M,
    ops: &[Operation<M::Input, M::Output>],
    partitions: &[Vec<usize>],
    budget: Budget,
    workers: usize,
    spent: &AtomicU64,
) -> Vec<Option<PartitionResult>> {
    use std::cell::Cell;
    use std::sync::Mutex;
    use std::sync::atomic::AtomicUsize;

    let next = AtomicUsize::new(0);
    let first_failure = AtomicUsize::new(usize::MAX);
    let results: Mutex<Vec<Option<PartitionResult>>> =
        Mutex::new((0..partitions.len()).map(|_| None).collect());
    // Takes partitions until the queue is empty; `on_steps` hears of every search step spent.
    let work = |on_steps: &dyn Fn(u64)| {
        loop {
            let at = next.fetch_add(1, Ordering::Relaxed);
            if at >= partitions.len() || at > first_failure.load(Ordering::Relaxed) {
                return;
            }
            let tick = |steps: u64| {
                on_steps(steps);
                first_failure.load(Ordering::Relaxed) < at
            };
            let result = check_partition(model, ops, &partitions[at], budget, &tick, spent);
            if matches!(result, Some(PartitionResult::Stuck(_))) {
                first_failure.fetch_min(at, Ordering::Relaxed);
            }
            results.lock().unwrap_or_else(|e| e.into_inner())[at] = result;
        }
    };
    std::thread::scope(|scope| {
        let (spent, spawned) = (Cell::new(0u64), Cell::new(false));
        debug_assert!(
            workers > 1,
            "one worker searches in order, on the calling thread"
        );
        work(&|steps| {
            spent.set(spent.get() + steps);
            if !spawned.get() && spent.get() >= SPAWN_HELPERS_AFTER_STEPS {
                spawned.set(true);
                for _ in 1..workers {
                    scope.spawn(move || work(&|_| {}));
                }
            }
        });
    });
    let results = results.into_inner().unwrap_or_else(|e| e.into_inner());
    let first_failure = first_failure.into_inner();
    debug_assert!(
        results[..first_failure.min(results.len())]
            .iter()
            .all(Option::is_some),
        "every partition before the first failure was searched to the end"
    );
    results
}

/// Search steps the calling thread spends alone before it starts helper threads (about a
/// millisecond: less than that is not worth a thread).
const SPAWN_HELPERS_AFTER_STEPS: u64 = 16 * 1024;

/// Searches one partition; `None` if `tick` asked to abandon it. `tick(n)` is told of every `n`
/// steps spent (the pruning's once, then every [`TICK_EVERY`] search steps and once at the
/// end) and returns whether to abandon. The pruning ([`twins`]) and the search share the
/// budget; what they spent is added to `spent`.
fn check_partition<M: Model>(
    model: &M,
    ops: &[Operation<M::Input, M::Output>],
    indices: &[usize],
    budget: Budget,
    tick: &dyn Fn(u64) -> bool,
    spent: &AtomicU64,
) -> Option<PartitionResult> {
    let max_steps = budget.max_steps_per_partition;
    let Some((twin_before, pruning)) = twins(ops, indices, max_steps) else {
        spent.fetch_add(max_steps, Ordering::Relaxed);
        tick(max_steps);
        return Some(PartitionResult::OutOfBudget);
    };
    debug_assert!(pruning <= max_steps, "the pruning stays within the budget");
    spent.fetch_add(pruning, Ordering::Relaxed);
    if tick(pruning) {
        return None;
    }
    let mut search = Search::new(model, ops, indices, twin_before);
    let outcome = search.run(max_steps - pruning, tick);
    debug_assert!(
        search.steps <= max_steps - pruning,
        "the search stays within what the pruning left of the budget"
    );
    spent.fetch_add(search.steps, Ordering::Relaxed);
    tick(search.steps % TICK_EVERY);
    Some(match outcome {
        Outcome::Linearizable => PartitionResult::Linearizable,
        Outcome::OutOfBudget => PartitionResult::OutOfBudget,
        Outcome::Abandoned => return None,
        Outcome::Stuck => PartitionResult::Stuck(Box::new(search.explain())),
    })
}

/// Effective return time: +∞ for an unknown outcome.
fn return_time<I, O>(op: &Operation<I, O>) -> u64 {
    match (&op.output, op.ret) {
        (Some(_), Some(ret)) => ret,
        _ => u64::MAX,
    }
}

/// One (input, output) group's candidate twins: (return time, local op), in (call, return)
/// order, return times strictly increasing.
type Candidates = Vec<(u64, usize)>;

/// Pruning of equivalent operations: for each op `b`, the latest op `a` before it in (call,
/// return) order with the same input and output whose interval `a` is dominated by `b`'s
/// (`a.call <= b.call`, `a.ret <= b.ret`). Any linearization placing `b` before `a` stays valid
/// with the two swapped, so the search only places `b` once `a` is placed.
///
/// Near-linear: the ops are grouped by (input, output), and each group keeps a stack of its
/// candidates so far, in order, with strictly increasing return times (a candidate followed
/// by one returning no later is never the latest that fits, so it is popped). `b`'s twin is the
/// last candidate returning by `b`'s return, found by binary search. The work (one unit per
/// comparison of return times) is returned with the twins, or `None` once it exceeds
/// `max_work`.
fn twins<I: Ord, O: Ord>(
    ops: &[Operation<I, O>],
    indices: &[usize],
    max_work: u64,
) -> Option<(Vec<Option<usize>>, u64)> {
    let mut order: Vec<usize> = (0..indices.len()).collect();
    let key = |l: usize| (ops[indices[l]].call, return_time(&ops[indices[l]]), l);
    order.sort_by_key(|&l| key(l));
    let mut candidates: BTreeMap<(&I, Option<&O>), Candidates> = BTreeMap::new();
    let mut twin_before = vec![None; indices.len()];
    let mut work = 0u64;
    for &b in &order {
        let op_b = &ops[indices[b]];
        let ret_b = return_time(op_b);
        let stack = candidates
            .entry((&op_b.input, op_b.output.as_ref()))
            .or_default();
        let fitting = stack.partition_point(|&(ret_a, _)| {
            work += 1;
            ret_a <= ret_b
        });
        twin_before[b] = fitting.checked_sub(1).map(|top| stack[top].1);
        while stack.last().is_some_and(|&(ret_a, _)| {
            work += 1;
            ret_a >= ret_b
        }) {
            stack.pop();
        }
        stack.push((ret_b, b));
        debug_assert!(
            stack.len() < 2 || stack[stack.len() - 2].0 < ret_b,
            "a group's candidates have strictly increasing return times"
        );
        // A twin comes strictly earlier in (call, return) order, so waiting for twins never
        // forms a cycle.
        debug_assert!(twin_before[b].is_none_or(|a| key(a) < key(b)));
        if work > max_work {
            return None;
        }
    }
    Some((twin_before, work))
}

/// How one partition's search ended.
enum Outcome {
    Linearizable,
    Stuck,
    OutOfBudget,
    /// Stopped because the caller no longer needs the answer.
    Abandoned,
}

/// How many search steps pass between two calls of the search's `tick`.
const TICK_EVERY: u64 = 1024;

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
    /// Search steps spent so far by [`Self::run`].
    steps: u64,
}

/// The deepest point where the search had to take an operation back.
struct Stuck<S> {
    depth: usize,
    op: usize,
    states: BTreeSet<S>,
}

impl<'a, M: Model> Search<'a, M> {
    fn new(
        model: &'a M,
        ops: &'a [Operation<M::Input, M::Output>],
        indices: &'a [usize],
        twin_before: Vec<Option<usize>>,
    ) -> Self {
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
            twin_before,
            stuck: None,
            longest_prefix: Vec::new(),
            steps: 0,
        };
        let mut call_node = vec![NIL; indices.len()];
        for (position, &(_, is_return, op)) in events.iter().enumerate() {
            let node = position + 1;
            search.node_op[node] = op;
            if is_return {
                debug_assert_ne!(call_node[op], NIL, "an op's call event precedes its return");
                search.matching[call_node[op]] = node;
            } else {
                call_node[op] = node;
            }
        }
        debug_assert_eq!(
            search.matching.iter().filter(|&&m| m != NIL).count(),
            indices.len(),
            "every call node has its return node"
        );
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

    /// Searches; `tick(TICK_EVERY)` every [`TICK_EVERY`] steps, abandoning when it says so. The
    /// steps spent are left in `self.steps`.
    fn run(&mut self, max_steps: u64, tick: &dyn Fn(u64) -> bool) -> Outcome {
        let words = self.indices.len().div_ceil(64);
        let mut linearized = vec![0u64; words];
        let mut cache = Memo::new(words);
        let mut calls: Vec<(usize, M::State)> = Vec::new();
        let known_total = self.known_ops();
        let mut known_left = known_total;
        let mut state = self.model.init();
        let mut entry = self.next[HEAD];
        let mut steps = 0u64;
        while known_left > 0 {
            // The search counters: at most every known op is left, at most every op placed.
            debug_assert!(known_left <= known_total && calls.len() <= self.indices.len());
            if steps >= max_steps {
                return Outcome::OutOfBudget;
            }
            steps += 1;
            self.steps = steps;
            if steps.is_multiple_of(TICK_EVERY) && tick(TICK_EVERY) {
                return Outcome::Abandoned;
            }
            if entry != NIL && self.matching[entry] != NIL {
                let local = self.node_op[entry];
                let op = self.op(local);
                let twin_waits =
                    self.twin_before[local].is_some_and(|twin| !placed(&linearized, twin));
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
                    debug_assert!(!placed(&linearized, local), "an op in the list is unplaced");
                    mark(&mut linearized, local, true);
                    if cache.insert(&linearized, &next_state) {
                        calls.push((entry, std::mem::replace(&mut state, next_state)));
                        self.lift(entry);
                        known_left -= usize::from(op.output.is_some());
                        self.note_prefix(&calls);
                        entry = self.next[HEAD];
                        continue;
                    }
                    mark(&mut linearized, local, false);
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
                debug_assert!(placed(&linearized, local), "an op taken back was placed");
                mark(&mut linearized, local, false);
                self.unlift(call);
                known_left += usize::from(self.op(local).output.is_some());
                entry = self.next[call];
            }
        }
        debug_assert!(
            self.places_every_known_op(&linearized),
            "a linearization places every op whose outcome is known"
        );
        Outcome::Linearizable
    }

    /// How many of the partition's ops have a known outcome (the search ends when all are
    /// placed).
    fn known_ops(&self) -> usize {
        self.indices
            .iter()
            .filter(|&&i| self.ops[i].output.is_some())
            .count()
    }

    /// Whether every op whose outcome is known is placed in `linearized`.
    fn places_every_known_op(&self, linearized: &[u64]) -> bool {
        (0..self.indices.len())
            .all(|local| self.op(local).output.is_none() || placed(linearized, local))
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

    /// "process P <op> at [call, return]" in the model's words.
    fn describe(&self, local: usize) -> String {
        let op = self.op(local);
        format!(
            "process {} {} at {}",
            op.process,
            self.model.describe_op(&op.input, op.output.as_ref()),
            interval(op)
        )
    }

    /// One state possible before the stuck operation, and why the operation cannot go on from
    /// it.
    fn describe_state_before(&self, state: &M::State, local: usize) -> String {
        let op = self.op(local);
        let why = match self.model.step(state, &op.input, op.output.as_ref()) {
            None => self
                .model
                .describe_rejection(state, &op.input, op.output.as_ref()),
            Some(next) => format!(
                "the operation fits here (then {}), but the operations that must follow it \
                 cannot all be placed after it",
                self.model.describe_state(&next)
            ),
        };
        format!("{}: {why}", self.model.describe_state(state))
    }

    /// The explanation of a stuck search; `partition` is left empty for [`check`] to fill.
    fn explain(&self) -> Explanation {
        const MAX_STATES: usize = 16;
        let stuck = self
            .stuck
            .as_ref()
            .expect("a stuck search recorded where it got stuck");
        debug_assert!(
            stuck.depth <= self.longest_prefix.len() && !stuck.states.is_empty(),
            "the stuck point is no deeper than the longest prefix and has a state"
        );
        let op = self.op(stuck.op);
        let states: Vec<&M::State> = stuck.states.iter().collect();
        let summary = format!(
            "{}, but {} then",
            self.describe(stuck.op),
            self.model.describe_possible_states(&states)
        );
        let mut state = self.model.init();
        let mut longest_prefix = Vec::with_capacity(self.longest_prefix.len());
        for &local in &self.longest_prefix {
            let placed = self.op(local);
            if let Some(next) = self
                .model
                .step(&state, &placed.input, placed.output.as_ref())
            {
                state = next;
            }
            longest_prefix.push(format!(
                "{} -> {}",
                self.describe(local),
                self.model.describe_state(&state)
            ));
        }
        Explanation {
            partition: String::new(),
            summary,
            stuck_index: self.indices[stuck.op],
            stuck_process: op.process,
            stuck_call: op.call,
            stuck_return: op.output.as_ref().and(op.ret),
            stuck: self.describe(stuck.op),
            placed_before: stuck.depth,
            states_before: states
                .iter()
                .take(MAX_STATES)
                .map(|s| self.describe_state_before(s, stuck.op))
                .collect(),
            states_omitted: states.len().saturating_sub(MAX_STATES),
            longest_prefix,
            longest_prefix_indices: self
                .longest_prefix
                .iter()
                .map(|&l| self.indices[l])
                .collect(),
        }
    }
}

/// Whether partition-local op `local` is placed in the bit set `linearized`.
fn placed(linearized: &[u64], local: usize) -> bool {
    linearized[local / 64] & (1 << (local % 64)) != 0
}

/// Marks partition-local op `local` placed (or not) in the bit set `linearized`.
fn mark(linearized: &mut [u64], local: usize, placed: bool) {
    if placed {
        linearized[local / 64] |= 1 << (local % 64);
    } else {
        linearized[local / 64] &= !(1 << (local % 64));
    }
}

/// `[call, return]`, or `[call, ∞)` for an operation whose outcome is unknown.
fn interval<I, O>(op: &Operation<I, O>) -> String {
    match (&op.output, op.ret) {
        (Some(_), Some(ret)) => format!("[{}, {ret}]", op.call),
        _ => format!("[{}, ∞)", op.call),
    }
}
