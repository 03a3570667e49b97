//! A linearizability checker, generic over a sequential [`Model`].
//!
//! The search is the Wing–Gong–Lowe algorithm with memoisation of (set of linearized
//! operations, model state), as described by Gavin Lowe, "Testing for linearizability",
//! Concurrency and Computation: Practice and Experience 29(4), 2017, and implemented by
//! porcupine (<https://github.com/anishathalye/porcupine>, MIT). The history is split into
//! independent partitions with the model's [`Model::key`] (P-compositionality: Horn &
//! Kroening, "Faster linearizability checking via P-compositionality", FORTE 2015), and the
//! partitions are checked in parallel, in rounds of counted work, so that the verdict and its
//! explanation are deterministic and a violation is reported as soon as one is found.
//!
//! # Which partition is reported
//!
//! Work is counted in search steps (and pruning comparisons), never in time. In round 0 every
//! partition may spend 65,536 steps in all; each later round doubles that, up to the
//! [`Budget`], and a partition still undecided resumes its search where it paused (no step is
//! done twice). At the end of the first round in which some partition is proven not
//! linearizable, the verdict is final: the other partitions are abandoned (a kill flag, as in
//! porcupine), and the **failing partition with the smallest key among those that failed in
//! that round** is reported. Which partitions fail within a given allowance does not depend on
//! threads or time, and every partition with a smaller key has spent its allowance by then, so
//! the reported partition is deterministic; the extra work a violation costs beyond finding it
//! is at most one round's allowance for each partition with a smaller key. So a violation
//! found in 10,000 steps is reported after about 10,000 steps per partition, however long the
//! other partitions would take; the reported partition is not always the smallest failing key
//! overall (a smaller key that fails only after more work is not waited for). A partition that
//! spends its whole budget undecided is out of budget, which gives [`Verdict::Unknown`] unless
//! another partition fails.
//!
//! Operations whose outcome is unknown (Jepsen's `:info`) may or may not take effect: their
//! return time is +∞ (the request may still be in flight), and the search stops as soon as
//! only such operations remain unplaced. A search that exhausts its [`Budget`] returns
//! [`Verdict::Unknown`], never "linearizable".
//!
//! # Two reductions beyond porcupine's
//!
//! Both keep every verdict (each is proved where it is implemented, and the differential test
//! against brute force checks them):
//! - **read-only operations first** (the engine's search): an operation that never changes
//!   the state ([`Model::is_read_only`]: a read, a failed compare-and-set) is placed as soon
//!   as it fits, and the orders that place it later are never tried;
//! - **fewer unknown-outcome operations cover more** (the memo): a position that placed a
//!   superset of the unknown-outcome operations of an explored position, with the same other
//!   operations and state, is not explored again.
//!
//! Where the search stays exponential: many concurrent writes whose order no later read
//! observes (a register under 50 clients; runs of appends to one key that a put overwrites
//! before any get reads them). Each order is a distinct state until it is overwritten, so the
//! positions grow with the orders; porcupine's search has the same positions (`cargo bench
//! --bench check` prints the generated families that show it).

mod engine;
mod evidence;
mod from_history;
pub mod kube;
pub mod kv;
pub mod lease;
pub mod ledger;
mod memo;
mod named;
pub mod register;
#[cfg(test)]
mod rejection_tests;

pub use engine::parallelism;
pub use engine::{
    Budget, Exhausted, Explanation, Operation, Verdict, Work, check, check_counted, check_measured,
};
pub use evidence::LinEvidence;
pub use from_history::{
    Extracted, KubeOps, LeaseOps, LedgerOps, check_kube_history, check_lease_history,
    check_ledger_history, kube_operations, lease_operations, ledger_operations,
};
pub use named::Named;

use std::fmt::Debug;

/// A sequential specification: the object the history is checked against.
///
/// `Sync` (the model, its inputs and outputs) because [`check`] searches partitions on several
/// threads, and `Send` (the state) because a paused search may resume on another thread; plain
/// data is both.
pub trait Model: Sync {
    /// The model's state; hashable so that the search can memoise it, ordered so that
    /// explanations list states in a fixed order.
    type State: Clone + Ord + std::hash::Hash + Debug + Send;
    /// An operation's input (the call); ordered so that the pruning of equivalent operations
    /// can group equal ones.
    type Input: Ord + Debug + Sync;
    /// An operation's output (the response); ordered as the input.
    type Output: Ord + Debug + Sync;
    /// The partition an operation belongs to (P-compositionality); `()` for a single object.
    type Key: Ord + Clone + Debug;

    /// The state before any operation.
    fn init(&self) -> Self::State;

    /// Applies `input` in `state`: the next state if the operation may return `output` there,
    /// `None` if it may not. `output` is `None` when the outcome is unknown; the model must then
    /// accept from every state (the operation may or may not have taken effect).
    fn step(
        &self,
        state: &Self::State,
        input: &Self::Input,
        output: Option<&Self::Output>,
    ) -> Option<Self::State>;

    /// The partition of an operation; operations in different partitions are independent.
    fn key(&self, input: &Self::Input) -> Self::Key;

    /// Whether `input` returning `output` never changes the state: [`Model::step`] returns
    /// `None` or `Some(state)` for **every** state (a read; a compare-and-set that failed).
    /// The search places such an operation as soon as it fits and never tries it later (the
    /// engine's "read-only operations first" proves why no linearization is lost), which
    /// turns many concurrent reads from exponential into linear work. `false`, the default,
    /// is always sound; `true` for an operation that changes some state gives wrong verdicts.
    fn is_read_only(&self, input: &Self::Input, output: &Self::Output) -> bool {
        let _ = (input, output);
        false
    }

    /// A state in plain words, for explanations.
    fn describe_state(&self, state: &Self::State) -> String {
        format!("{state:?}")
    }

    /// Who called an operation, for explanations: `process 3` by default (Jepsen's process
    /// numbers); a model over our histories names the replica (`replica-1`, `replica-2#1`).
    fn describe_process(&self, process: u64) -> String {
        format!("process {process}")
    }

    /// An operation in plain words, for explanations; it follows "process P" and precedes
    /// "at [call, return]", so a verb phrase reads best ("read 4", "wrote 3").
    fn describe_op(&self, input: &Self::Input, output: Option<&Self::Output>) -> String {
        match output {
            Some(output) => format!("{input:?} -> {output:?}"),
            None => format!("{input:?} -> unknown"),
        }
    }

    /// An operation's call or return time, for explanations (as the history gives it, by
    /// default; a model over our histories, whose times are µs, says `12.004 s`).
    fn describe_time(&self, time: u64) -> String {
        time.to_string()
    }

    /// Why `input` returning `output` cannot happen in `state`, in plain words; called only where
    /// [`Model::step`] returns `None`.
    fn describe_rejection(
        &self,
        state: &Self::State,
        input: &Self::Input,
        output: Option<&Self::Output>,
    ) -> String {
        let _ = (state, input, output);
        "the model does not allow the operation in this state".to_string()
    }

    /// The states possible at one point, as the end of a sentence after "but":
    /// "the state could only be A or B". `states` is in the model's order, never empty.
    fn describe_possible_states(&self, states: &[&Self::State]) -> String {
        let words: Vec<String> = states.iter().map(|s| self.describe_state(s)).collect();
        format!("the state could only be {}", join_with_or(&words))
    }
}

/// `a`, `a or b`, `a, b or c`: a list in plain words, for explanations.
pub fn join_with_or(items: &[String]) -> String {
    match items {
        [] => String::new(),
        [one] => one.clone(),
        [init @ .., last] => format!("{} or {last}", init.join(", ")),
    }
}
