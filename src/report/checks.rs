//! What a run's judgement becomes in `results.jsonl`: one [`CheckRecord`] per check, with each
//! violation's evidence as the history names it. A linearizability violation's evidence is
//! the engine's explanation, line by line, then `stuck: op N` and `prefix: op A, op B…` by op
//! id: what the report reads back (`explanation.rs`, the timeline's highlight).

use crate::check::Check;
use crate::check::invariants;
use crate::check::judge::{self, Judgement, LinearizabilityOutcome, Status};
use crate::check::linearizability::Verdict;
use crate::history::History;
use crate::results::record::{CheckRecord, ViolationRecord};

/// One [`CheckRecord`] per invariant and linearizability check, in report order; a
/// linearizability check's `checks` is the number of operations of its kind in `history`
/// (lease calls for LIN-LEASE, ledger and journal calls for LIN-LEDGER). `violate`: the
/// checks the run is expected to violate (a mutant's scenario), marked so in each record.
pub fn check_records(
    judgement: &Judgement,
    violate: &[Check],
    history: &History,
) -> Vec<CheckRecord> {
    let invariants = judgement.invariants.invariants.iter().map(|report| {
        let name = report.invariant;
        CheckRecord {
            name,
            checks: report.checks,
            expected_violation: violate.contains(&name),
            verdict: judge::invariant_status(report).verdict(),
            not_judged: report.not_judged(),
            violations: report.violations.iter().map(violation_record).collect(),
            allowed: report.allowed.iter().map(violation_record).collect(),
        }
    });
    let linearizability = judgement.linearizability.iter().map(|(check, outcome)| {
        let name = *check;
        let violations = match outcome {
            LinearizabilityOutcome::Checked(Verdict::NotLinearizable(explanation)) => {
                let mut evidence: Vec<String> =
                    explanation.to_string().lines().map(str::to_owned).collect();
                // The same operations by op id, for the timeline to draw over the history.
                let (stuck, prefix) = judge::explained_op_ids(history, *check, explanation);
                evidence.extend(stuck.map(|id| format!("stuck: op {id}")));
                if !prefix.is_empty() {
                    let ops: Vec<String> = prefix.iter().map(|id| format!("op {id}")).collect();
                    evidence.push(format!("prefix: {}", ops.join(", ")));
                }
                vec![ViolationRecord {
                    message: format!("no linearization of partition {}", explanation.partition),
                    evidence,
                }]
            }
            LinearizabilityOutcome::Unreadable(why) => vec![ViolationRecord {
                message: format!("history unreadable as operations: {why}"),
                evidence: Vec::new(),
            }],
            _ => Vec::new(),
        };
        let status = outcome.status();
        CheckRecord {
            name,
            checks: judge::operations(history, name),
            expected_violation: violate.contains(&name),
            verdict: status.verdict(),
            not_judged: match status {
                Status::NotJudged { why } => Some(why),
                _ => None,
            },
            violations,
            allowed: Vec::new(),
        }
    });
    invariants.chain(linearizability).collect()
}

/// `violation` as a record: its message and each piece of evidence as the history names it.
fn violation_record(violation: &invariants::Violation) -> ViolationRecord {
    ViolationRecord {
        message: violation.message.clone(),
        evidence: violation.evidence.iter().map(ToString::to_string).collect(),
    }
}
