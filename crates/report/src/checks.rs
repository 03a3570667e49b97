//! What a run's judgement becomes in `results.jsonl`: one [`CheckRecord`] per check, with each
//! violation's evidence as data (docs/campaigns.md#evidence-is-data): an invariant's
//! [`leasesim_check::invariants::Evidence`], a linearizability check's explanation with the op
//! ids it names ([`LinEvidence`]), which the report and the timeline read.

use leasesim_check::judge::{self, Judgement, LinearizabilityOutcome, Status};
use leasesim_check::linearizability::{LinEvidence, Verdict};
use leasesim_history::History;
use leasesim_history::catalogue::Check;
use leasesim_results::record::{CheckRecord, ViolationRecord};

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
            violations: report.violations.iter().map(Into::into).collect(),
            allowed: report.allowed.iter().map(Into::into).collect(),
        }
    });
    let linearizability = judgement.linearizability.iter().map(|(check, outcome)| {
        let name = *check;
        let violations = match outcome {
            LinearizabilityOutcome::Checked(Verdict::NotLinearizable(explanation)) => {
                let (stuck_op, prefix_ops) = judge::explained_op_ids(history, *check, explanation);
                vec![ViolationRecord {
                    message: format!("no linearization of partition {}", explanation.partition),
                    evidence: Vec::new(),
                    linearization: Some(Box::new(LinEvidence {
                        explanation: (**explanation).clone(),
                        stuck_op,
                        prefix_ops,
                    })),
                }]
            }
            LinearizabilityOutcome::Unreadable(why) => vec![ViolationRecord {
                message: format!("history unreadable as operations: {why}"),
                evidence: Vec::new(),
                linearization: None,
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
