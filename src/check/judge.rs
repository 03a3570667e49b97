//! One verdict over a simulation's history: every invariant plus both linearizability checks
//! (DESIGN.md, "Checkers"), folded into the exit code of DESIGN.md, "Exit codes".
//!
//! `leasesim run` and the campaign judge every run through [`judge`]; nothing here knows how
//! the history was recorded.

use std::fmt;
use std::path::Path;

use super::Check;
use super::invariants::{self, Report};
use super::linearizability::{Budget, Verdict, check_lease_history, check_ledger_history};
use crate::exit::Exit;
use crate::history::{History, HistoryError};

/// One linearizability check's outcome.
#[derive(Clone, Debug)]
pub enum LinearizabilityOutcome {
    /// The search ran: its verdict.
    Checked(Verdict),
    /// The history could not be read as that model's operations (a malformed history).
    Unreadable(String),
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
                    LinearizabilityOutcome::Checked(Verdict::Unknown) => Exit::Inconclusive,
                    LinearizabilityOutcome::Unreadable(_) => Exit::Inconclusive,
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
        self.linearizability
            .iter()
            .filter(|(_, outcome)| {
                !matches!(
                    outcome,
                    LinearizabilityOutcome::Checked(
                        Verdict::Linearizable | Verdict::NotLinearizable(_)
                    )
                )
            })
            .map(|(check, _)| *check)
            .collect()
    }
}

impl fmt::Display for Judgement {
    /// One line per check (`TOKEN: 12 checks, 0 violations`, `LIN-LEASE: linearizable`),
    /// each violation indented under its check with its evidence.
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
                LinearizabilityOutcome::Checked(Verdict::Unknown) => {
                    writeln!(f, "{check}: unknown (the search ran out of budget)")?
                }
                LinearizabilityOutcome::Unreadable(why) => {
                    writeln!(f, "{check}: unknown (cannot read the history: {why})")?
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
        .map(|check| {
            let verdict = match check {
                Check::LinLease => check_lease_history(history, budget),
                _ => check_ledger_history(history, budget),
            };
            let outcome = match verdict {
                Ok(verdict) => LinearizabilityOutcome::Checked(verdict),
                Err(error) => LinearizabilityOutcome::Unreadable(error.to_string()),
            };
            (check, outcome)
        })
        .collect();
    Judgement {
        invariants: invariants::check_all(history),
        linearizability,
    }
}

/// Judges the history a run wrote into `out` (`out/history.jsonl`) and renders the verdict
/// for a terminal: every check's line, the violations with their evidence, and a last line
/// naming what was violated. Returns the exit code (violations of the checks in `expected`
/// do not count) and the text.
///
/// # Errors
/// The history file cannot be read or is malformed (a [`HistoryError`] naming the line).
pub fn judge_run_folder(out: &Path, expected: &[Check]) -> Result<(Exit, String), HistoryError> {
    let history = History::read_jsonl_path(out.join("history.jsonl"))?;
    let judgement = judge(&history, Budget::default());
    let code = judgement.exit_code_expecting(expected);
    let mut text = judgement.to_string();
    let violated = judgement.violated();
    let verdict = match code {
        Exit::Clean if violated.is_empty() => "every check passed".to_owned(),
        Exit::Clean => format!("violated as expected: {}", Check::list(&violated)),
        Exit::Inconclusive => format!(
            "inconclusive: {} ran out of budget; nothing violated",
            Check::list(&judgement.inconclusive())
        ),
        Exit::LivenessViolation => "LIVENESS VIOLATION: LIVE".to_owned(),
        _ => format!("SAFETY VIOLATION: {}", Check::list(&violated)),
    };
    text += &format!("verdict: {verdict}\n");
    Ok((code, text))
}
