//! The Wing–Gong–Lowe search over one partition, and the partitioning around it.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};

use super::Model;
use super::memo::{Insert, Known, Memo};

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

/// How much search a check may spend before it answers [`Verdict::Unknown`]: steps (time)
/// per partition, and memo entries (memory) per check, shared among the partitions not yet
/// decided (docs/checks.md#linearizability-engine).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Budget {
    /// Search steps (one step = one try to place or to take back an operation, one scan of
    /// the operations that may be placed next for a read-only one that fits, or one
    /// comparison of the equivalent-operation pruning that runs before the search) per
    /// partition.
    pub max_steps_per_partition: u64,
    /// Positions the searches' memos may hold at once, over the whole check (one entry per
    /// explored position a memo keeps; see [`Budget::memo_entries`]). Each round of the search
    /// gives every partition not yet decided an equal share; a search whose memo reaches its
    /// share pauses, and resumes when a later round's share is larger (other partitions were
    /// decided and dropped their memos), or is out of budget ([`Exhausted::Memo`]) when it is
    /// not: it never records, nor allocates for, a position past its share.
    pub max_memo_entries: u64,
}

impl Budget {
    /// A budget of `max_steps_per_partition` search steps for each partition, and the default
    /// memo cap.
    pub fn steps(max_steps_per_partition: u64) -> Self {
        Self {
            max_steps_per_partition,
            ..Self::default()
        }
    }

    /// This budget with a cap of `max_memo_entries` memo entries for the whole check.
    ///
    /// Entries, not bytes: each is counted exactly, in O(1), as it is recorded. An entry's
    /// bytes are the memo's own (its hash, window and chain links: 36; its table's slots: 8 to
    /// 16), its state's (`size_of` the model's state, and whatever that state owns on the heap,
    /// which the engine cannot see) and its window of placed ops and unknown-outcome set (8
    /// bytes a word, a few words: see the memo's module documentation); and the memo's vectors
    /// double as they grow. So the entries are the bound and the bytes a measurement: `cargo
    /// bench --bench check` prints peak RSS per generated family.
    pub fn memo_entries(self, max_memo_entries: u64) -> Self {
        Self {
            max_memo_entries,
            ..self
        }
    }
}

impl Default for Budget {
    /// 50 million steps per partition: measured, under 15 s a partition on the generated
    /// families (`cargo bench --bench check`). A step's work is bounded by the partition's
    /// size and the memo's sets of unknown-outcome ops, not by a constant, so this is a
    /// measurement, not a bound.
    ///
    /// 4 million memo entries: measured, peak RSS of `leasesim check` under 1 GiB on every
    /// generated family (963 MiB at most: a key-value state costs about 250 bytes an entry),
    /// where the largest memo of a decided check (Jepsen's files and the families) is under
    /// two fifths of it
    /// (docs/checks.md#linearizability-engine). Without a cap,
    /// porcupine's memo needed about 40 GB on one of etcd's histories (etcd issue 21928).
    fn default() -> Self {
        Self {
            max_steps_per_partition: 50_000_000,
            max_memo_entries: DEFAULT_MEMO_ENTRIES,
        }
    }
}

/// [`Budget::default`]'s memo cap.
const DEFAULT_MEMO_ENTRIES: u64 = 4_000_000;

/// Which part of the [`Budget`] a partition used up (`steps`, `memo` in JSON).
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Exhausted {
    /// Its steps ([`Budget::max_steps_per_partition`]).
    Steps,
    /// Its share of the memo entries ([`Budget::max_memo_entries`]).
    Memo,
}

impl fmt::Display for Exhausted {
    /// What ran out, and for the memo how to raise it: `the search ran out of budget`, `the
    /// search's memo reached its cap (raise it with leasesim check --memo-entries)`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Exhausted::Steps => write!(f, "the search ran out of budget"),
            Exhausted::Memo => write!(
                f,
                "the search's memo reached its cap (raise it with leasesim check --memo-entries)"
            ),
        }
    }
}

/// The outcome of a check.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Every partition has a linearization.
    Linearizable,
    /// Some partition has none; the explanation shows where the search got stuck.
    NotLinearizable(Box<Explanation>),
    /// The budget ran out before an answer and no violation was found: the part that ran
    /// out for the first partition (in key order) that used it up.
    Unknown(Exhausted),
}

/// Why a history is not linearizable, in plain words (the model's [`Model::describe_op`],
/// [`Model::describe_state`], [`Model::describe_rejection`] and
/// [`Model::describe_possible_states`]). Times are the history's own (for the Jepsen readers,
/// line numbers); `∞` marks an operation whose outcome is unknown. [`fmt::Display`] renders it
/// as a few indented lines.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
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

impl Explanation {
    /// The partition, when the history has several (`None` for the single object `()`).
    pub fn named_partition(&self) -> Option<&str> {
        (self.partition != "()").then_some(self.partition.as_str())
    }

    /// The heading of [`Explanation::states_before`], without its colon: `states possible just
    /// before it (with 2 earlier operations placed), and why none admits it`.
    pub fn states_heading(&self) -> String {
        format!(
            "states possible just before it (with {} earlier {} placed), and why none admits it",
            self.placed_before,
            plural(self.placed_before, "operation", "operations")
        )
    }

    /// The states listed under [`Explanation::states_heading`]: each state with why the stuck
    /// operation cannot go on from it, then `… and N more` when some were left out.
    pub fn states_listed(&self) -> Vec<String> {
        let mut states = self.states_before.clone();
        if self.states_omitted > 0 {
            states.push(format!("… and {} more", self.states_omitted));
        }
        states
    }
}

impl fmt::Display for Explanation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "{}.", self.summary)?;
        if let Some(partition) = self.named_partition() {
            writeln!(f, "  partition: {partition}")?;
        }
        writeln!(
            f,
            "  the operation that cannot be placed is #{} of the history: {}",
            self.stuck_index, self.stuck
        )?;
        writeln!(f, "  {}:", self.states_heading())?;
        for state in self.states_listed() {
            writeln!(f, "    {state}")?;
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
/// The partitions are searched in rounds of counted work (see the module documentation, "Which
/// partition is reported"): in round `r` every partition not yet decided may spend up to
/// `FIRST_ALLOWANCE · 2^r` steps in all (capped at the budget), and a paused search resumes
/// where it stopped, so no step is repeated. The first round in which some partition is proven
/// not linearizable ends the check: the verdict is final, the other partitions are abandoned,
/// and the failing partition of that round with the smallest key is reported. A partition that
/// exhausts the whole budget is out of budget; [`Verdict::Unknown`] is returned only when no
/// partition fails and one ran out of budget, never "linearizable".
///
/// Within a round, at most [`std::thread::available_parallelism`] scoped threads (the calling
/// thread among them) take partitions in key order from a shared queue; a history with a single
/// partition is searched on the calling thread alone. The verdict and the reported partition do
/// not depend on thread timing: a partition is abandoned only once a partition with a smaller
/// key has failed in the same round, and every partition with a smaller key than the reported
/// one has spent its whole allowance (the outcome of a search within a counted allowance is
/// fixed).
///
/// The model and the operations are shared between the threads, and a paused search may resume
/// on another thread, hence the `Sync` and `Send` bounds of [`Model`].
pub fn check<M: Model>(
    model: &M,
    ops: &[Operation<M::Input, M::Output>],
    budget: Budget,
) -> Verdict {
    check_counted(model, ops, budget).0
}

/// [`check`], and the work it counted against the budget: search steps and pruning
/// comparisons, summed over the partitions and the rounds (each partition at most
/// `budget.max_steps_per_partition` in all). With several partitions on several threads, a
/// partition abandoned after another failed counts what it spent, so only the verdict (and its
/// explanation) is deterministic then.
pub fn check_counted<M: Model>(
    model: &M,
    ops: &[Operation<M::Input, M::Output>],
    budget: Budget,
) -> (Verdict, u64) {
    let (verdict, work) = check_measured(model, ops, budget);
    (verdict, work.steps)
}

/// What a check spent, against each part of its [`Budget`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Work {
    /// Counted work, as [`check_counted`] returns it.
    pub steps: u64,
    /// The most entries one partition's memo held, when its search ended or paused.
    pub memo_entries: u64,
}

/// [`check_counted`], with the largest memo too ([`Work`]); as deterministic as it.
pub fn check_measured<M: Model>(
    model: &M,
    ops: &[Operation<M::Input, M::Output>],
    budget: Budget,
) -> (Verdict, Work) {
    let (spent, memo) = (AtomicU64::new(0), AtomicU64::new(0));
    let verdict = check_spending(
        model,
        ops,
        budget,
        Spent {
            steps: &spent,
            memo: &memo,
        },
    );
    let work = Work {
        steps: spent.into_inner(),
        memo_entries: memo.into_inner(),
    };
    (verdict, work)
}

/// Where the rounds add up what they spend: steps (summed) and the largest memo.
#[derive(Clone, Copy)]
struct Spent<'a> {
    steps: &'a AtomicU64,
    memo: &'a AtomicU64,
}

/// The counted work (pruning and search steps) each partition may spend in the first round;
/// each later round doubles it, up to the budget. Small enough that a violation found early
/// is reported at once (a round of 64 Ki steps is about a millisecond per partition), large
/// enough that most partitions are decided in the first round.
pub(super) const FIRST_ALLOWANCE: u64 = 1 << 16;

fn check_spending<M: Model>(
    model: &M,
    ops: &[Operation<M::Input, M::Output>],
    budget: Budget,
    spent: Spent<'_>,
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
    let round = Round {
        model,
        ops,
        partitions: &partitions,
        max_steps: budget.max_steps_per_partition,
        workers,
        spent: spent.steps,
        memo: spent.memo,
    };
    let mut slots: Vec<Slot<'_, M>> = partitions.iter().map(|_| Slot::Fresh).collect();
    let mut steps = FIRST_ALLOWANCE.min(round.max_steps);
    // Ends: once the steps are the whole budget, a round leaves undecided only searches paused
    // at their memo share, and the next ends each of them unless its share grew, which takes
    // another partition decided.
    loop {
        let undecided = slots.iter().filter(|slot| slot.is_undecided()).count() as u64;
        if undecided == 0 {
            break;
        }
        let allowance = Allowance {
            steps,
            memo: budget.max_memo_entries / undecided,
        };
        if let Some((at, mut explanation)) = round.run(&mut slots, allowance) {
            explanation.partition = format!("{:?}", keys[at]);
            return Verdict::NotLinearizable(explanation);
        }
        steps = steps.saturating_mul(2).min(round.max_steps);
    }
    slots
        .iter()
        .find_map(|slot| match slot {
            Slot::OutOfBudget(exhausted) => Some(Verdict::Unknown(*exhausted)),
            _ => None,
        })
        .unwrap_or(Verdict::Linearizable)
}

/// [`std::thread::available_parallelism`], read once per process (it reads cgroup files on
/// Linux, tens of microseconds: as long as checking a small history).
pub fn parallelism() -> usize {
    static PARALLELISM: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    *PARALLELISM.get_or_init(|| std::thread::available_parallelism().map_or(1, usize::from))
}

/// Where one partition's search stands between rounds.
enum Slot<'a, M: Model> {
    /// Not searched yet (not even pruned).
    Fresh,
    /// Paused at an earlier round's allowance; `pruning` is the work its pruning counted.
    Paused {
        search: Box<Search<'a, M>>,
        pruning: u64,
    },
    Linearizable,
    OutOfBudget(Exhausted),
}

impl<M: Model> Slot<'_, M> {
    fn is_undecided(&self) -> bool {
        matches!(self, Slot::Fresh | Slot::Paused { .. })
    }
}

/// What one partition's turn in a round ended with.
enum Turn<'a, M: Model> {
    /// Decided (linearizable, out of budget) or paused again.
    Slot(Slot<'a, M>),
    /// Not linearizable; the explanation's `partition` is filled in by [`check`].
    Stuck(Box<Explanation>),
    /// Given up because a partition with a smaller key failed in this round.
    Abandoned,
}

/// A round's undecided partitions, each with its position in key order.
type Queue<'r, M> = Vec<(usize, Slot<'r, M>)>;

/// What the partitions of a [`Queue`] ended their turns with, each with its position.
type Turns<'r, M> = Vec<(usize, Turn<'r, M>)>;

/// What one round lets each undecided partition spend: counted work in all, and memo entries
/// (its share of [`Budget::max_memo_entries`]).
#[derive(Clone, Copy)]
struct Allowance {
    steps: u64,
    memo: u64,
}

/// What every round shares: the history, its partitions in key order, the budget.
struct Round<'r, M: Model> {
    model: &'r M,
    ops: &'r [Operation<M::Input, M::Output>],
    partitions: &'r [Vec<usize>],
    max_steps: u64,
    workers: usize,
    spent: &'r AtomicU64,
    /// The largest memo a partition's turn ended with.
    memo: &'r AtomicU64,
}

impl<'r, M: Model> Round<'r, M> {
    /// Gives every undecided partition in `slots` its turn, up to `allowance` counted work in
    /// all, and stores what it ended with; returns the failing partition with the smallest key
    /// (its position and explanation), if any failed.
    fn run(
        &self,
        slots: &mut [Slot<'r, M>],
        allowance: Allowance,
    ) -> Option<(usize, Box<Explanation>)> {
        let queue: Queue<'r, M> = slots
            .iter_mut()
            .enumerate()
            .filter(|(_, slot)| slot.is_undecided())
            .map(|(at, slot)| (at, std::mem::replace(slot, Slot::Fresh)))
            .collect();
        let turns = if self.workers <= 1 || queue.len() <= 1 {
            self.in_order(queue, allowance)
        } else {
            self.in_parallel(queue, allowance)
        };
        let mut failure = None;
        for (at, turn) in turns {
            match turn {
                Turn::Slot(slot) => slots[at] = slot,
                Turn::Stuck(explanation) => {
                    if failure.is_none() {
                        failure = Some((at, explanation));
                    }
                }
                Turn::Abandoned => {}
            }
        }
        failure
    }

    /// The turns one by one on the calling thread, stopping at the first failure (the later
    /// partitions are not searched). In key order.
    fn in_order(&self, queue: Queue<'r, M>, allowance: Allowance) -> Turns<'r, M> {
        let mut turns = Vec::with_capacity(queue.len());
        for (at, slot) in queue {
            let turn = self.turn(at, slot, allowance, &|_| false);
            let stuck = matches!(turn, Turn::Stuck(_));
            turns.push((at, turn));
            if stuck {
                break;
            }
        }
        turns
    }

    /// The turns on up to `workers` threads pulling from a shared queue in key order. The
    /// calling thread starts alone and starts `workers - 1` scoped helpers only once the check
    /// has spent [`SPAWN_HELPERS_AFTER_STEPS`] steps, so that histories of many tiny partitions
    /// do not pay for threads. A turn after the first known failure of the round is skipped or
    /// abandoned; every turn before it runs to its end, so the failing partition with the
    /// smallest key is always found, whatever the threads do. In key order.
    fn in_parallel(&self, queue: Queue<'r, M>, allowance: Allowance) -> Turns<'r, M> {
        use std::cell::Cell;
        use std::sync::Mutex;
        use std::sync::atomic::AtomicUsize;

        let next = AtomicUsize::new(0);
        let first_failure = AtomicUsize::new(usize::MAX);
        let at: Vec<usize> = queue.iter().map(|&(at, _)| at).collect();
        let queue: Vec<Mutex<Option<Slot<'r, M>>>> = queue
            .into_iter()
            .map(|(_, slot)| Mutex::new(Some(slot)))
            .collect();
        let turns: Mutex<Vec<Option<Turn<'r, M>>>> =
            Mutex::new((0..queue.len()).map(|_| None).collect());
        // Takes turns until the queue is empty; `on_steps` hears of every search step spent.
        let work = |on_steps: &dyn Fn(u64)| {
            loop {
                let job = next.fetch_add(1, Ordering::Relaxed);
                if job >= queue.len() || job > first_failure.load(Ordering::Relaxed) {
                    return;
                }
                let tick = |steps: u64| {
                    on_steps(steps);
                    first_failure.load(Ordering::Relaxed) < job
                };
                let slot = lock(&queue[job]).take().expect("each turn is taken once");
                let turn = self.turn(at[job], slot, allowance, &tick);
                if matches!(turn, Turn::Stuck(_)) {
                    first_failure.fetch_min(job, Ordering::Relaxed);
                }
                lock(&turns)[job] = Some(turn);
            }
        };
        std::thread::scope(|scope| {
            let (alone, spawned) = (
                Cell::new(self.spent.load(Ordering::Relaxed)),
                Cell::new(false),
            );
            let spawn = || {
                spawned.set(true);
                for _ in 1..self.workers {
                    scope.spawn(move || work(&|_| {}));
                }
            };
            if alone.get() >= SPAWN_HELPERS_AFTER_STEPS {
                spawn();
            }
            work(&|steps| {
                alone.set(alone.get() + steps);
                if !spawned.get() && alone.get() >= SPAWN_HELPERS_AFTER_STEPS {
                    spawn();
                }
            });
        });
        let turns = turns.into_inner().unwrap_or_else(|e| e.into_inner());
        let first_failure = first_failure.into_inner();
        debug_assert!(
            turns[..first_failure.min(turns.len())]
                .iter()
                .all(Option::is_some),
            "every turn before the first failure ran to its end"
        );
        at.into_iter()
            .zip(turns)
            .filter_map(|(at, turn)| Some((at, turn?)))
            .collect()
    }

    /// One partition's turn: pruned and searched if fresh, resumed if paused, until its counted
    /// work reaches `allowance` (or the search ends). `tick(n)` is told of search steps spent
    /// (every [`TICK_EVERY`]) and of the pruning's work, and returns whether to abandon. The
    /// pruning ([`twins`]) and the search share the budget; what they spent is added to
    /// `spent`.
    fn turn(
        &self,
        at: usize,
        slot: Slot<'r, M>,
        allowance: Allowance,
        tick: &dyn Fn(u64) -> bool,
    ) -> Turn<'r, M> {
        let (mut search, pruning) = match slot {
            Slot::Fresh => {
                let indices = &self.partitions[at];
                let Some((twin_before, pruning)) = twins(self.ops, indices, self.max_steps) else {
                    self.spent.fetch_add(self.max_steps, Ordering::Relaxed);
                    tick(self.max_steps);
                    return Turn::Slot(Slot::OutOfBudget(Exhausted::Steps));
                };
                debug_assert!(
                    pruning <= self.max_steps,
                    "the pruning stays within the budget"
                );
                self.spent.fetch_add(pruning, Ordering::Relaxed);
                if tick(pruning) {
                    return Turn::Abandoned;
                }
                let search = Search::new(self.model, self.ops, indices, twin_before);
                (Box::new(search), pruning)
            }
            Slot::Paused { search, .. }
                if search.memo_full && search.at.cache.entries() >= allowance.memo =>
            {
                return Turn::Slot(Slot::OutOfBudget(Exhausted::Memo));
            }
            Slot::Paused { search, pruning } => (search, pruning),
            decided => return Turn::Slot(decided),
        };
        let before = search.steps;
        search.at.cache.allow(allowance.memo);
        search.memo_full = false;
        let outcome = search.run(allowance.steps.saturating_sub(pruning), tick);
        debug_assert!(
            search.steps <= self.max_steps - pruning,
            "the search stays within what the pruning left of the budget"
        );
        let spent = search.steps - before;
        self.spent.fetch_add(spent, Ordering::Relaxed);
        let ticked = search.steps / TICK_EVERY - before / TICK_EVERY;
        tick(spent.saturating_sub(ticked * TICK_EVERY));
        self.memo
            .fetch_max(search.at.cache.entries(), Ordering::Relaxed);
        match outcome {
            Outcome::Linearizable => Turn::Slot(Slot::Linearizable),
            Outcome::Stuck => Turn::Stuck(Box::new(search.explain())),
            Outcome::Paused if allowance.steps >= self.max_steps => {
                Turn::Slot(Slot::OutOfBudget(Exhausted::Steps))
            }
            Outcome::Paused | Outcome::MemoFull => Turn::Slot(Slot::Paused { search, pruning }),
            Outcome::Abandoned => Turn::Abandoned,
        }
    }
}

/// Locks a mutex, whether or not a thread panicked holding it (a panic propagates from the
/// scope anyway).
fn lock<T>(mutex: &std::sync::Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|e| e.into_inner())
}

/// Counted work the check spends on the calling thread alone before it starts helper threads
/// (about a millisecond: less than that is not worth a thread).
const SPAWN_HELPERS_AFTER_STEPS: u64 = 16 * 1024;
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
    /// Stopped at the allowance given; the search may resume from there.
    Paused,
    /// Stopped because the memo holds its share of [`Budget::max_memo_entries`]; the search
    /// may resume from there, with a larger share, repeating the step it stopped at.
    MemoFull,
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
    /// Local op → whether it never changes the state ([`Model::is_read_only`]).
    read_only: Vec<bool>,
    stuck: Option<Stuck<M::State>>,
    /// The longest run of placed ops seen (local ops, in order), and how many of the placed
    /// ops agree with its start: kept in amortised O(1) a step (copying the placed ops at
    /// every new depth made a deep search quadratic, issue 21).
    longest_prefix: Vec<usize>,
    prefix_agrees: usize,
    /// Search steps spent so far by [`Self::run`], over all its calls.
    steps: u64,
    /// Whether the last call of [`Self::run`] stopped because a position could not be
    /// recorded in the memo at its share ([`Outcome::MemoFull`]).
    memo_full: bool,
    /// Where the search stands, kept between calls of [`Self::run`] so that it resumes.
    at: Position<M::State>,
}

/// The search's position: what is placed, in which state, which entry is tried next.
struct Position<S> {
    /// The bit set of placed partition-local ops.
    linearized: Vec<u64>,
    /// The positions already explored (see [`Memo`]).
    cache: Memo<S>,
    /// The placed ops with a known outcome, as a bit set of partition-local ops in which every
    /// unknown-outcome op counts as placed (so a word is full when all its known-outcome ops
    /// are placed); words `known_low..known_high` are the memo's [`Known`] window.
    known: Vec<u64>,
    /// The lowest word of `known` that is not full (`known.len()` when all are).
    known_low: usize,
    /// One past the last word of `known` with a placed known-outcome op (0: none).
    known_high: usize,
    /// The bit set of the partition-local ops whose outcome is unknown.
    info_mask: Vec<u64>,
    /// Partition-local op → its number among the unknown-outcome ops, `None` for a known one.
    info_number: Vec<Option<u32>>,
    /// The placed unknown-outcome ops, by their number; empty if the partition has none.
    info_placed: Vec<u64>,
    /// Partition-local op → its [`zobrist`] key, 0 for an unknown-outcome op (which the
    /// memo's key leaves out).
    op_keys: Vec<u64>,
    /// The XOR of the keys of the placed ops: the Zobrist hash of the placed ops with a known
    /// outcome, kept as ops are placed and taken back so that the memo need not hash the bit
    /// set.
    known_hash: u64,
    /// The placed ops, in linearization order.
    calls: Vec<Placed<S>>,
    /// How many ops with a known outcome the partition has, and how many are unplaced.
    known_total: usize,
    known_left: usize,
    /// The state after the placed ops.
    state: S,
    /// The next node to try.
    entry: usize,
    /// Whether the scan from `entry` looks only for read-only ops (see [`Search::run`]).
    reads_first: bool,
}

impl<S: Clone + Eq + std::hash::Hash> Position<S> {
    /// Records the position of `linearized` in `state` as explored, unless it was covered
    /// already or the memo is full ([`Memo::insert`]). Costs the [`Known`] window and the
    /// unknown-outcome set, not the partition's size.
    fn explore(&mut self, state: &S) -> Insert {
        let (low, high) = (self.known_low, self.known_high.max(self.known_low));
        let known = Known {
            first: low,
            words: &self.known[low..high],
        };
        self.cache
            .insert(known, self.known_hash, &self.info_placed, state)
    }

    /// Marks partition-local op `local` placed or not, keeping [`Self::known_hash`], the
    /// [`Known`] window's ends and the unknown-outcome set.
    fn set_placed(&mut self, local: usize, placed: bool) {
        mark(&mut self.linearized, local, placed);
        self.known_hash ^= self.op_keys[local];
        if let Some(number) = self.info_number[local] {
            mark(&mut self.info_placed, number as usize, placed);
            return;
        }
        mark(&mut self.known, local, placed);
        let word = local / 64;
        if placed {
            self.known_high = self.known_high.max(word + 1);
            let (words, ops) = (self.known.len(), self.op_keys.len());
            while self.known_low < words
                && self.known[self.known_low] == full_word(self.known_low, words, ops)
            {
                self.known_low += 1;
            }
        } else {
            self.known_low = self.known_low.min(word);
            while self.known_high > 0
                && self.known[self.known_high - 1] == self.info_mask[self.known_high - 1]
            {
                self.known_high -= 1;
            }
        }
    }
}

/// Word `w` of a bit set of `ops` ops (in `words` words) with every op set.
fn full_word(w: usize, words: usize, ops: usize) -> u64 {
    match ops % 64 {
        r if w + 1 == words && r != 0 => (1 << r) - 1,
        _ => u64::MAX,
    }
}

/// A fixed pseudo-random 64-bit key per op (splitmix64 of its local number): the hash of a
/// set of ops is the XOR of their keys (Zobrist hashing), updated in O(1) per op placed or
/// taken back.
fn zobrist(local: usize) -> u64 {
    let mut z = (local as u64)
        .wrapping_add(1)
        .wrapping_mul(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// One placed op of the search's stack.
struct Placed<S> {
    /// Its call node.
    call: usize,
    /// The state before it.
    before: S,
    /// Placed as a read-only op that fit: when the search takes it back, it takes back the
    /// position before it too (see [`Search::run`]).
    forced: bool,
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
            read_only: indices
                .iter()
                .map(|&i| {
                    let op = &ops[i];
                    op.output
                        .as_ref()
                        .is_some_and(|output| model.is_read_only(&op.input, output))
                })
                .collect(),
            twin_before,
            stuck: None,
            longest_prefix: Vec::new(),
            prefix_agrees: 0,
            steps: 0,
            memo_full: false,
            at: Self::start(model, ops, indices),
        };
        search.link(&events);
        search.at.known_total = search.known_ops();
        search.at.known_left = search.at.known_total;
        search.at.entry = search.next[HEAD];
        search
    }

    /// The position before anything is placed: the unknown-outcome ops numbered and counted
    /// as placed in `known` (they may take effect or not), the state the model's initial one.
    fn start(
        model: &M,
        ops: &[Operation<M::Input, M::Output>],
        indices: &[usize],
    ) -> Position<M::State> {
        let words = indices.len().div_ceil(64);
        let mut info_mask = vec![0u64; words];
        let mut info_number = vec![None; indices.len()];
        let mut infos = 0u32;
        for (local, &i) in indices.iter().enumerate() {
            if ops[i].output.is_none() {
                mark(&mut info_mask, local, true);
                info_number[local] = Some(infos);
                infos += 1;
            }
        }
        // Unknown-outcome ops count as placed in `known`, so a word of them alone is full.
        let known = info_mask.clone();
        let known_low = (0..words)
            .find(|&w| known[w] != full_word(w, words, indices.len()))
            .unwrap_or(words);
        Position {
            linearized: vec![0u64; words],
            cache: Memo::new((infos as usize).div_ceil(64)),
            known,
            known_low,
            known_high: 0,
            info_mask,
            info_number,
            info_placed: vec![0u64; (infos as usize).div_ceil(64)],
            op_keys: indices
                .iter()
                .enumerate()
                .map(|(local, &i)| {
                    if ops[i].output.is_some() {
                        zobrist(local)
                    } else {
                        0
                    }
                })
                .collect(),
            known_hash: 0,
            calls: Vec::new(),
            known_total: 0,
            known_left: 0,
            state: model.init(),
            entry: NIL,
            reads_first: true,
        }
    }

    /// Lays the time-ordered `events` on the node list: each node's op, each call node's return.
    fn link(&mut self, events: &[(u64, bool, usize)]) {
        let mut call_node = vec![NIL; self.indices.len()];
        for (position, &(_, is_return, op)) in events.iter().enumerate() {
            let node = position + 1;
            self.node_op[node] = op;
            if is_return {
                debug_assert_ne!(call_node[op], NIL, "an op's call event precedes its return");
                self.matching[call_node[op]] = node;
            } else {
                call_node[op] = node;
            }
        }
        debug_assert_eq!(
            self.matching.iter().filter(|&&m| m != NIL).count(),
            self.indices.len(),
            "every call node has its return node"
        );
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

    /// Searches on from where the last call stopped until the search ends or [`Self::steps`]
    /// reaches `max_steps` ([`Outcome::Paused`]); `tick(TICK_EVERY)` every [`TICK_EVERY`]
    /// steps (counted over all calls), abandoning when it says so. Pausing and resuming takes
    /// the same steps as one call with the larger `max_steps`.
    ///
    /// # Read-only operations first
    ///
    /// At each new position the scan first looks for a read-only op ([`Model::is_read_only`])
    /// that may be placed next, and places it *forced*: the orders that place it later are
    /// never tried, and if the search fails from there it fails from the position before too.
    /// This is sound: if a linearization `σ` extends the position and the read-only op `r`
    /// fits now, then `r · (σ without r)` is one as well: `r` leaves the state as it is, so
    /// every op of `σ` meets the state it met in `σ`; every op that must precede `r` in real
    /// time returned before `r` was called and is placed already (that is what "may be placed
    /// next" means), and moving `r` earlier only relaxes the order of the others; `r`'s twin
    /// (see [`twins`]) is placed. Without it, `k` concurrent reads of one value are placed in
    /// up to `2^k` subsets, each a distinct memo entry: the register families of 20 and 50
    /// clients without a violation (issue 17) were exponential for this search and for
    /// porcupine alike.
    fn run(&mut self, max_steps: u64, tick: &dyn Fn(u64) -> bool) -> Outcome {
        while self.at.known_left > 0 {
            // The search counters: at most every known op is left, at most every op placed.
            debug_assert!(
                self.at.known_left <= self.at.known_total
                    && self.at.calls.len() <= self.indices.len()
            );
            if self.steps >= max_steps {
                return Outcome::Paused;
            }
            self.steps += 1;
            if self.steps.is_multiple_of(TICK_EVERY) && tick(TICK_EVERY) {
                return Outcome::Abandoned;
            }
            let entry = self.at.entry;
            let is_call = entry != NIL && self.matching[entry] != NIL;
            if self.at.reads_first {
                if !self.place_a_read() {
                    return Outcome::Stuck;
                }
                if self.memo_full {
                    return Outcome::MemoFull;
                }
            } else if is_call {
                if self.read_only[self.node_op[entry]] {
                    // It did not fit in this state when the scan looked for reads first.
                    self.at.entry = self.next[entry];
                } else {
                    self.try_place(entry, false);
                    if self.memo_full {
                        return Outcome::MemoFull;
                    }
                }
            } else if !self.take_back(Some(entry)) {
                return Outcome::Stuck;
            }
        }
        debug_assert!(
            self.places_every_known_op(&self.at.linearized),
            "a linearization places every op whose outcome is known"
        );
        Outcome::Linearizable
    }

    /// One step of the scan for a read-only op that fits (see [`Self::run`]): walks the ops
    /// that may be placed next (the call nodes before the first return node) and tries the
    /// read-only ones until one fits, which is placed forced; if none fits, the scan for every
    /// op starts at the head. `false` when a forced op's position was covered already and
    /// nothing is left to take back (see [`Self::try_place`]).
    fn place_a_read(&mut self) -> bool {
        let mut node = self.next[HEAD];
        while node != NIL && self.matching[node] != NIL {
            if self.read_only[self.node_op[node]] {
                let placed = self.at.calls.len();
                if !self.try_place(node, true) {
                    return false;
                }
                if self.at.calls.len() != placed || self.memo_full {
                    // Placed, or its position was covered and the search took back, or the
                    // memo is full and the search ends.
                    return true;
                }
            }
            node = self.next[node];
        }
        self.at.reads_first = false;
        self.at.entry = self.next[HEAD];
        true
    }

    /// Tries to place the op of call node `entry` next: on success it is lifted out of the list
    /// and the search starts again from the head, looking for read-only ops first; otherwise
    /// it moves on to the next node. A `forced` op (a read-only one, see [`Self::run`]) whose
    /// position is covered ([`Memo::insert`]) means the position before it need not be
    /// searched on: the search takes back, and returns `false` when nothing is left to take
    /// back (not linearizable). Why no linearization is lost: were the partition
    /// linearizable, the explored position with the shortest completion would have been
    /// taken back, yet its next op on that completion (the forced read, if one fits) leads to
    /// an explored or covering position with a shorter one.
    fn try_place(&mut self, entry: usize, forced: bool) -> bool {
        let local = self.node_op[entry];
        let op = self.op(local);
        let at = &mut self.at;
        let twin_waits = self.twin_before[local].is_some_and(|twin| !placed(&at.linearized, twin));
        let next = if twin_waits {
            None
        } else {
            // An unknown-outcome op that would leave the state as it is can as well not take
            // effect at all, which the early stop already allows: skip it.
            self.model
                .step(&at.state, &op.input, op.output.as_ref())
                .filter(|next| op.output.is_some() || *next != at.state)
        };
        if let Some(next_state) = next {
            debug_assert!(
                !placed(&at.linearized, local),
                "an op in the list is unplaced"
            );
            debug_assert!(
                !forced || next_state == at.state,
                "a read-only op leaves the state as it is"
            );
            at.set_placed(local, true);
            let explored = at.explore(&next_state);
            if explored == Insert::Full {
                at.set_placed(local, false);
                self.memo_full = true;
                return true;
            }
            if explored == Insert::New {
                let before = std::mem::replace(&mut at.state, next_state);
                at.calls.push(Placed {
                    call: entry,
                    before,
                    forced,
                });
                at.known_left -= usize::from(op.output.is_some());
                at.reads_first = true;
                self.lift(entry);
                self.note_prefix();
                self.at.entry = self.next[HEAD];
                return true;
            }
            at.set_placed(local, false);
            if forced {
                return self.take_back(None);
            }
        }
        self.at.entry = self.next[entry];
        true
    }

    /// At return node `entry` (or where a forced op found its position explored, `None`):
    /// takes the last placed op back, and every forced op before it, and tries the node after
    /// the last one taken back; `false` when nothing is placed (the partition is not
    /// linearizable).
    fn take_back(&mut self, entry: Option<usize>) -> bool {
        if let Some(entry) = entry {
            self.note_stuck(entry, self.at.calls.len());
        }
        loop {
            let Some(Placed {
                call,
                before,
                forced,
            }) = self.at.calls.pop()
            else {
                return false;
            };
            self.prefix_agrees = self.prefix_agrees.min(self.at.calls.len());
            self.at.state = before;
            let local = self.node_op[call];
            debug_assert!(
                placed(&self.at.linearized, local),
                "an op taken back was placed"
            );
            self.at.set_placed(local, false);
            self.unlift(call);
            self.at.known_left += usize::from(self.op(local).output.is_some());
            self.at.entry = self.next[call];
            self.at.reads_first = false;
            if !forced {
                return true;
            }
        }
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

    /// After an op is placed: extends [`Self::longest_prefix`] if the placed ops are now
    /// longer, copying only the part that differs from it.
    fn note_prefix(&mut self) {
        let depth = self.at.calls.len();
        let newest = self.node_op[self.at.calls[depth - 1].call];
        if self.prefix_agrees + 1 == depth && self.longest_prefix.get(depth - 1) == Some(&newest) {
            self.prefix_agrees = depth;
        } else if depth > self.longest_prefix.len() {
            self.longest_prefix.truncate(self.prefix_agrees);
            let placed = &self.at.calls[self.prefix_agrees..];
            self.longest_prefix
                .extend(placed.iter().map(|placed| self.node_op[placed.call]));
            self.prefix_agrees = depth;
        }
    }

    /// Records that the return `node` was reached with `depth` operations placed, in the
    /// current state.
    fn note_stuck(&mut self, node: usize, depth: usize) {
        if node == NIL {
            return;
        }
        let state = &self.at.state;
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
            "{} {} at {}",
            self.model.describe_process(op.process),
            self.model.describe_op(&op.input, op.output.as_ref()),
            interval(self.model, op)
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
fn interval<M: Model>(model: &M, op: &Operation<M::Input, M::Output>) -> String {
    let call = model.describe_time(op.call);
    match (&op.output, op.ret) {
        (Some(_), Some(ret)) => format!("[{call}, {}]", model.describe_time(ret)),
        _ => format!("[{call}, ∞)"),
    }
}

#[cfg(test)]
mod tests {
    use rand_chacha::ChaCha8Rng;
    use rand_core::{RngCore, SeedableRng};

    use super::{Operation, Outcome, Search, twins};
    use crate::linearizability::register::{CasRegister, RegisterInput, RegisterOutput};

    type Op = Operation<RegisterInput, RegisterOutput>;

    /// A random register history of `n` overlapping ops: reads, writes and cas of 0..3, some
    /// with an unknown outcome, outputs drawn at random (so many histories are not
    /// linearizable and the search backtracks, taking forced reads back).
    fn history(rng: &mut ChaCha8Rng, n: u64) -> Vec<Op> {
        (0..n)
            .map(|p| {
                let call = rng.next_u64() % 20;
                let ret = call + 1 + rng.next_u64() % 10;
                let v = (rng.next_u64() % 3) as i64;
                let (input, output) = match rng.next_u64() % 4 {
                    0 | 1 => (RegisterInput::Read, RegisterOutput::Read(Some(v))),
                    2 => (RegisterInput::Write(v), RegisterOutput::Written),
                    _ => (
                        RegisterInput::Cas {
                            old: v,
                            new: (v + 1) % 3,
                        },
                        RegisterOutput::Cas(rng.next_u64().is_multiple_of(2)),
                    ),
                };
                let unknown = rng.next_u64().is_multiple_of(8);
                Operation {
                    process: p,
                    input,
                    output: (!unknown).then_some(output),
                    call,
                    ret: Some(ret),
                }
            })
            .collect()
    }

    fn outcome_name(outcome: &Outcome) -> &'static str {
        match outcome {
            Outcome::Linearizable => "linearizable",
            Outcome::Stuck => "stuck",
            Outcome::Paused => "paused",
            Outcome::MemoFull => "memo full",
            Outcome::Abandoned => "abandoned",
        }
    }

    /// Pausing is invisible: a search resumed every few steps (the rounds of counted work)
    /// ends as one uninterrupted search does, after exactly as many steps, with forced reads
    /// and covered positions in the histories.
    #[test]
    fn a_search_paused_every_few_steps_ends_as_one_that_never_paused() {
        let mut rng = ChaCha8Rng::seed_from_u64(17);
        let mut stuck = 0;
        for round in 0..400 {
            let ops = history(&mut rng, 4 + round % 9);
            let indices: Vec<usize> = (0..ops.len()).collect();
            let (twin_before, _) = twins(&ops, &indices, u64::MAX).expect("no budget to run out");
            let mut whole = Search::new(&CasRegister, &ops, &indices, twin_before.clone());
            let expected = whole.run(u64::MAX, &|_| false);
            let mut paused = Search::new(&CasRegister, &ops, &indices, twin_before);
            let every = 1 + round % 5;
            let outcome = loop {
                match paused.run(paused.steps + every, &|_| false) {
                    Outcome::Paused => continue,
                    outcome => break outcome,
                }
            };
            assert_eq!(
                (outcome_name(&outcome), paused.steps),
                (outcome_name(&expected), whole.steps),
                "history {round}: {ops:?}"
            );
            stuck += usize::from(matches!(expected, Outcome::Stuck));
        }
        assert!(
            stuck > 50,
            "the histories exercise failing searches: {stuck} of 400"
        );
    }
}
