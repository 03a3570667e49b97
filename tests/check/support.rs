//! What several of the check tests share.

use leasesim::check::linearizability::Verdict;
use leasesim::history::{Line, Op, OpLine, OpResult, Outcome, Process};

/// The index of the operation a `NotLinearizable` verdict got stuck on; panics, naming the
/// verdict, on any other.
pub fn stuck_index(verdict: &Verdict) -> usize {
    match verdict {
        Verdict::NotLinearizable(explanation) => explanation.stuck_index,
        other => panic!("expected NotLinearizable, got {other:?}"),
    }
}

/// Op line `id`: `who` called `op` on session s1, invoked and completed at the bounds of
/// `window` (µs, true time and its own clock alike), with `outcome` and `result`.
pub fn op_line(
    id: u64,
    who: Process,
    op: Op,
    window: (u64, u64),
    outcome: Outcome,
    result: OpResult,
) -> Line {
    Line::Op(OpLine {
        id,
        process: who,
        session: "s1".into(),
        op,
        invoke_us: window.0,
        complete_us: Some(window.1),
        invoke_local_us: window.0,
        complete_local_us: Some(window.1),
        outcome,
        result: Some(result),
    })
}
