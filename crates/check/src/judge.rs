//! One verdict over a simulation's history: every invariant plus both linearizability checks
//! (docs/checks.md), folded into one exit code (docs/exit-codes.md).
//!
//! `leasesim run` and the campaign judge every run through [`judge`]; nothing here knows how
//! the history was recorded.

use std::fmt;

use super::Check;
use super::invariants::{self, Report};
use super::linearizability::{
    Budget, Explanation, Verdict, check_kube_history, check_lease_history, check_ledger_history,
    kube_operations, lease_operations, ledger_operations,
};
use leasesim_history::exit::Exit;
use leasesim_history::verdict::CheckVerdict;
use leasesim_history::{History, Op};

/// One linearizability check's outcome.
#[derive(Clone, Debug)]
pub enum LinearizabilityOutcome {
    /// The search ran: its verdict.
    Checked(Verdict),
    /// The history could not be read as that model's operations (a malformed history).
    Unreadable(String),
    /// The history has no operation of that model (`no lease operations`): nothing to
    /// search, so nothing judged.
    NotJudged(String),
}

/// One check's result over one history.
#[derive(Clone, PartialEq, Eq, Debug)]
pub enum Status {
    /// Judged, and nothing violated.
    Pass,
    /// Violated.
    Fail,
    /// Nothing to judge (no line of the kind the check counts): never a pass. Does not
    /// change the exit code by itself.
    NotJudged {
        /// What the history lacks (`no decision lines`).
        why: String,
    },
    /// A search ran out of budget, or the history could not be read as operations.
    Inconclusive {
        /// Which of the two, in plain terms.
        why: String,
    },
}

impl Status {
    /// The status as a check's verdict in `results.jsonl` and `result.json`, without its why.
    pub fn verdict(&self) -> CheckVerdict {
        match self {
            Status::Pass => CheckVerdict::Pass,
            Status::Fail => CheckVerdict::Fail,
            Status::NotJudged { .. } => CheckVerdict::NotJudged,
            Status::Inconclusive { .. } => CheckVerdict::Unknown,
        }
    }
}

impl LinearizabilityOutcome {
    /// The outcome as a [`Status`].
    pub fn status(&self) -> Status {
        match self {
            LinearizabilityOutcome::Checked(Verdict::Linearizable) => Status::Pass,
            LinearizabilityOutcome::Checked(Verdict::NotLinearizable(_)) => Status::Fail,
            LinearizabilityOutcome::Checked(Verdict::Unknown(exhausted)) => Status::Inconclusive {
                why: exhausted.to_string(),
            },
            LinearizabilityOutcome::Unreadable(why) => Status::Inconclusive {
                why: format!("cannot read the history: {why}"),
            },
            LinearizabilityOutcome::NotJudged(why) => Status::NotJudged { why: why.clone() },
        }
    }
}

/// An invariant's result as a [`Status`].
pub fn invariant_status(report: &invariants::InvariantReport) -> Status {
    match report.not_judged() {
        _ if !report.passed() => Status::Fail,
        Some(why) => Status::NotJudged { why },
        None => Status::Pass,
    }
}

/// Everything judged over one history.
#[derive(Clone, Debug)]
pub struct Judgement {
    /// The invariants, in [`Check::INVARIANTS`] order.
    pub invariants: Report,
    /// The linearizability checks, in [`Check::LINEARIZABILITY`] order.
    pub linearizability: Vec<(Check, LinearizabilityOutcome)>,
}

impl Judgement {
    /// The exit code this judgement stands for: 1 for a safety invariant or a
    /// non-linearizable history, 5 for LIVE alone, 4 when a search ran out of budget (or
    /// the history could not be read as operations) and nothing was violated, else 0.
    pub fn exit_code(&self) -> Exit {
        self.exit_code_expecting(&[])
    }

    /// As [`Judgement::exit_code`], but violations of the checks named in `expected` (a
    /// mutant's scenario expects them) do not count.
    pub fn exit_code_expecting(&self, expected: &[Check]) -> Exit {
        let counts = |check: Check| !expected.contains(&check);
        let invariant_codes = self
            .invariants
            .violations()
            .filter(|v| counts(v.invariant))
            .map(|v| {
                if v.invariant.is_liveness() {
                    Exit::LivenessViolation
                } else {
                    Exit::SafetyViolation
                }
            });
        let linearizability_codes =
            self.linearizability
                .iter()
                .map(|(check, outcome)| match outcome {
                    LinearizabilityOutcome::Checked(Verdict::Linearizable) => Exit::Clean,
                    LinearizabilityOutcome::Checked(Verdict::NotLinearizable(_))
                        if !counts(*check) =>
                    {
                        Exit::Clean
                    }
                    LinearizabilityOutcome::Checked(Verdict::NotLinearizable(_)) => {
                        Exit::SafetyViolation
                    }
                    LinearizabilityOutcome::Checked(Verdict::Unknown(_)) => Exit::Inconclusive,
                    LinearizabilityOutcome::Unreadable(_) => Exit::Inconclusive,
                    LinearizabilityOutcome::NotJudged(_) => Exit::Clean,
                });
        Exit::worst(invariant_codes.chain(linearizability_codes))
    }

    /// Every check violated, in report order (`TOKEN`, …, `LIN-LEASE`, …); empty when
    /// clean or only inconclusive.
    pub fn violated(&self) -> Vec<Check> {
        let invariants = self
            .invariants
            .invariants
            .iter()
            .filter(|r| !r.passed())
            .map(|r| r.invariant);
        let linearizability = self
            .linearizability
            .iter()
            .filter(|(_, outcome)| {
                matches!(
                    outcome,
                    LinearizabilityOutcome::Checked(Verdict::NotLinearizable(_))
                )
            })
            .map(|(check, _)| *check);
        invariants.chain(linearizability).collect()
    }

    /// The checks that were inconclusive (budget exhausted or unreadable).
    pub fn inconclusive(&self) -> Vec<Check> {
        self.checks_where(|status| matches!(status, Status::Inconclusive { .. }))
    }

    /// The checks that judged nothing, in report order.
    pub fn not_judged(&self) -> Vec<Check> {
        self.checks_where(|status| matches!(status, Status::NotJudged { .. }))
    }

    /// The checks whose status `pick` chooses, in report order.
    fn checks_where(&self, pick: impl Fn(&Status) -> bool) -> Vec<Check> {
        self.statuses()
            .into_iter()
            .filter(|(_, status)| pick(status))
            .map(|(check, _)| check)
            .collect()
    }

    /// Every check's status, in report order ([`Check::ALL`]).
    pub fn statuses(&self) -> Vec<(Check, Status)> {
        let invariants = self
            .invariants
            .invariants
            .iter()
            .map(|report| (report.invariant, invariant_status(report)));
        let linearizability = self
            .linearizability
            .iter()
            .map(|(check, outcome)| (*check, outcome.status()));
        invariants.chain(linearizability).collect()
    }
}

impl fmt::Display for Judgement {
    /// One line per check (`TOKEN: 12 checks, 0 violations`, `LIN-LEASE: linearizable`,
    /// `EXCL: not judged (no grant, renew or release decision lines)`), each violation
    /// indented under its check with its evidence.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.invariants)?;
        for (check, outcome) in &self.linearizability {
            match outcome {
                LinearizabilityOutcome::Checked(Verdict::Linearizable) => {
                    writeln!(f, "{check}: linearizable")?
                }
                LinearizabilityOutcome::Checked(Verdict::NotLinearizable(explanation)) => {
                    writeln!(f, "{check}: not linearizable")?;
                    for line in explanation.to_string().lines() {
                        writeln!(f, "  {line}")?;
                    }
                }
                LinearizabilityOutcome::Checked(Verdict::Unknown(exhausted)) => {
                    writeln!(f, "{check}: unknown ({exhausted})")?
                }
                LinearizabilityOutcome::Unreadable(why) => {
                    writeln!(f, "{check}: unknown (cannot read the history: {why})")?
                }
                LinearizabilityOutcome::NotJudged(why) => {
                    writeln!(f, "{check}: not judged ({why})")?
                }
            }
        }
        Ok(())
    }
}

/// Judges `history`: every invariant ([`invariants::check_all`]) and both linearizability
/// checks, each search limited to `budget`.
pub fn judge(history: &History, budget: Budget) -> Judgement {
    let linearizability = Check::LINEARIZABILITY
        .into_iter()
        .map(|check| (check, linearizability(history, check, budget)))
        .collect();
    Judgement {
        invariants: invariants::check_all(history),
        linearizability,
    }
}

/// Whether `op` is a Lease API call (`kube_*`).
fn is_kube(op: &Op) -> bool {
    matches!(
        op,
        Op::KubeGet {} | Op::KubeCreate { .. } | Op::KubeUpdate { .. } | Op::KubeDelete { .. }
    )
}

/// Whether LIN-LEASE judges `history`'s Lease API calls (the Lease objects as a CAS register
/// keyed by `resourceVersion`) instead of its lease calls: a backend without an authority
/// clock (the config names none), or `kube_*` calls and no decision lines.
pub fn judges_lease_objects(history: &History) -> bool {
    history.authority_host().is_none()
        || (history.decisions().next().is_none() && history.ops().any(|op| is_kube(&op.op)))
}

/// Operations of `check`'s model in `history`: lease calls for LIN-LEASE (Lease API calls for
/// a kube history, [`judges_lease_objects`]), ledger and journal calls for LIN-LEDGER (0 for
/// an invariant).
pub fn operations(history: &History, check: Check) -> u64 {
    let lease = |op: &Op| {
        matches!(
            op,
            Op::LeaseAcquire { .. } | Op::LeaseRenew { .. } | Op::LeaseRelease { .. }
        )
    };
    let kube = judges_lease_objects(history);
    let count = |keep: &dyn Fn(&Op) -> bool| history.ops().filter(|l| keep(&l.op)).count() as u64;
    match check {
        Check::LinLease if kube => count(&is_kube),
        Check::LinLease => count(&lease),
        Check::LinLedger => count(&|op| !lease(op) && !is_kube(op)),
        _ => 0,
    }
}

/// The op ids (of `history`'s `op` lines) behind `explanation` of linearizability check
/// `check`: its stuck operation, and its longest valid prefix in linearization order. The
/// engine's indices are into the operations it was given ([`lease_operations`],
/// [`ledger_operations`], [`kube_operations`], which keep each one's op id); an added final
/// read has none and is left out.
pub fn explained_op_ids(
    history: &History,
    check: Check,
    explanation: &Explanation,
) -> (Option<u64>, Vec<u64>) {
    let ids = match check {
        Check::LinLease if judges_lease_objects(history) => {
            kube_operations(history).map(|e| e.op_ids)
        }
        Check::LinLease => lease_operations(history).map(|e| e.op_ids),
        _ => ledger_operations(history).map(|e| e.op_ids),
    }
    .unwrap_or_default();
    let id = |index: &usize| ids.get(*index).copied().flatten();
    let prefix = explanation
        .longest_prefix_indices
        .iter()
        .filter_map(id)
        .collect();
    (id(&explanation.stuck_index), prefix)
}

/// One linearizability check over `history`; not judged when the history has none of its
/// operations (a history that cannot be read is still unreadable).
fn linearizability(history: &History, check: Check, budget: Budget) -> LinearizabilityOutcome {
    let kube = judges_lease_objects(history);
    let verdict = match check {
        Check::LinLease if kube => check_kube_history(history, budget),
        Check::LinLease => check_lease_history(history, budget),
        _ => check_ledger_history(history, budget),
    };
    match verdict {
        Ok(Verdict::Linearizable) if operations(history, check) == 0 => {
            let what = match check {
                Check::LinLease if kube => "no kube operations",
                Check::LinLease => "no lease operations",
                _ => "no ledger or journal operations",
            };
            LinearizabilityOutcome::NotJudged(what.to_owned())
        }
        Ok(verdict) => LinearizabilityOutcome::Checked(verdict),
        Err(error) => LinearizabilityOutcome::Unreadable(error.to_string()),
    }
}

/// One run's judgement against its run file's expectations: what `leasesim run`/`replay`
/// print and `result.json` holds.
#[derive(Clone, Debug)]
pub struct RunVerdict {
    /// The exit code (docs/exit-codes.md).
    pub exit: Exit,
    /// The verdict in one line, without the exit code: `clean`, `clean (not judged: LIVE)`,
    /// `clean: violated as expected: LEDGER`, `FAIL: EXCL, TOKEN violated`, `FAIL: LEDGER
    /// expected violated, but it held`, `FAIL: EXCL violated; LEDGER expected violated, but it
    /// held`, `FAIL: LIVE violated (liveness)` or `inconclusive: LIN-LEASE: the search ran out
    /// of budget; nothing violated`.
    pub line: String,
    /// Every check judged, one line each ([`Judgement`]'s `Display`).
    pub text: String,
    /// The judgement itself.
    pub judgement: Judgement,
}

impl RunVerdict {
    /// The last line `leasesim run`/`replay` print: `verdict: <line> — exit <code>`.
    pub fn final_line(&self) -> String {
        format!("verdict: {} — exit {}", self.line, self.exit)
    }
}

/// Judges `history` (every check) as one run whose run file expects `expected` violated. A
/// violation it expects does not count against it, but one it expects and does not see does:
/// that is exit 1, as a campaign treats an expected violation never seen.
///
/// A run without a single operation whose checks all had nothing to judge (a plan whose runs
/// never start, a schedule that stops every replica before its first call) judged nothing:
/// it is bad input (exit 2), never clean, as `leasesim check` refuses a history with no
/// operation.
pub fn judge_run(history: &History, expected: &[Check]) -> RunVerdict {
    judge_run_within(history, expected, Budget::default())
}

/// As [`judge_run`], each linearizability search limited to `budget` instead of the default:
/// `leasesim judge --budget` judges any history file with it.
pub fn judge_run_within(history: &History, expected: &[Check], budget: Budget) -> RunVerdict {
    let judgement = judge(history, budget);
    if history.ops().next().is_none() && judgement.not_judged().len() == judgement.statuses().len()
    {
        return RunVerdict {
            exit: Exit::BadInput,
            line: "nothing judged: the run recorded no operation (its workload never called \
                   the lease or the ledger); give it a workload that runs"
                .to_owned(),
            text: judgement.to_string(),
            judgement,
        };
    }
    let violated = judgement.violated();
    let unseen: Vec<Check> = expected
        .iter()
        .copied()
        .filter(|check| !violated.contains(check))
        .collect();
    let mut exit = judgement.exit_code_expecting(expected);
    if !unseen.is_empty() {
        exit = Exit::worst([exit, Exit::SafetyViolation]);
    }
    let unexpected: Vec<Check> = violated
        .iter()
        .copied()
        .filter(|check| !expected.contains(check))
        .collect();
    let line = verdict_line(&judgement, exit, &violated, &unexpected, &unseen);
    RunVerdict {
        exit,
        line,
        text: judgement.to_string(),
        judgement,
    }
}

/// [`RunVerdict::line`] for a run that exits with `exit`.
fn verdict_line(
    judgement: &Judgement,
    exit: Exit,
    violated: &[Check],
    unexpected: &[Check],
    unseen: &[Check],
) -> String {
    let not_judged = judgement.not_judged();
    let not_judged = if not_judged.is_empty() {
        String::new()
    } else {
        format!(" (not judged: {})", Check::list(&not_judged))
    };
    let held = |unseen: &[Check]| {
        format!(
            "{} expected violated, but {} held",
            Check::list(unseen),
            if unseen.len() == 1 { "it" } else { "they" }
        )
    };
    // A run that sees other violations than the one it expects names both.
    let also_unseen = if unseen.is_empty() {
        String::new()
    } else {
        format!("; {}", held(unseen))
    };
    match exit {
        Exit::SafetyViolation if unexpected.is_empty() => format!("FAIL: {}", held(unseen)),
        Exit::Clean if violated.is_empty() => format!("clean{not_judged}"),
        Exit::Clean => format!(
            "clean: violated as expected: {}{not_judged}",
            Check::list(violated)
        ),
        // Each check with its own reason: a search out of budget, or a history it could not
        // read as operations.
        Exit::Inconclusive => format!(
            "inconclusive: {}; nothing violated{not_judged}",
            judgement
                .statuses()
                .into_iter()
                .filter_map(|(check, status)| match status {
                    Status::Inconclusive { why } => Some(format!("{check}: {why}")),
                    _ => None,
                })
                .collect::<Vec<_>>()
                .join(", ")
        ),
        Exit::LivenessViolation => format!("FAIL: LIVE violated (liveness){also_unseen}"),
        _ => format!("FAIL: {} violated{also_unseen}", Check::list(unexpected)),
    }
}
