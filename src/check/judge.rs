//! One verdict over a simulation's history: every invariant plus both linearizability checks
//! (DESIGN.md, "Checkers"), folded into the exit code of DESIGN.md, "Exit codes".
//!
//! `leasesim run` and the campaign judge every run through [`judge`]; nothing here knows how
//! the history was recorded.

use std::fmt;
use std::path::Path;

use super::invariants::{self, Invariant, Report};
use super::linearizability::{Budget, Verdict, check_lease_history, check_ledger_history};
use crate::history::{History, HistoryError};

/// Exit code: every check passed.
pub const CLEAN: u8 = 0;
/// Exit code: a safety invariant or a linearizability check failed.
pub const SAFETY_VIOLATION: u8 = 1;
/// Exit code: bad input or usage.
pub const BAD_INPUT: u8 = 2;
/// Exit code: the harness failed (panic, hang, nondeterminism).
pub const HARNESS_ERROR: u8 = 3;
/// Exit code: a check ran out of budget and found no violation.
pub const INCONCLUSIVE: u8 = 4;
/// Exit code: the liveness invariant (LIVE) failed.
pub const LIVENESS_VIOLATION: u8 = 5;

/// Folds exit codes: when several apply, the first in the order 3, 2, 1, 5, 4 wins
/// (DESIGN.md, "Exit codes"); 0 only when all are 0.
pub fn worst_exit(codes: impl IntoIterator<Item = u8>) -> u8 {
    const PRIORITY: [u8; 5] = [
        HARNESS_ERROR,
        BAD_INPUT,
        SAFETY_VIOLATION,
        LIVENESS_VIOLATION,
        INCONCLUSIVE,
    ];
    let codes: Vec<u8> = codes.into_iter().collect();
    PRIORITY
        .into_iter()
        .find(|code| codes.contains(code))
        .unwrap_or(CLEAN)
}

/// Which linearizability check.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Debug)]
pub enum LinearizabilityCheck {
    /// The lease service's history against the timed lease model.
    Lease,
    /// The ledger's history against the CAS log model.
    Ledger,
}

impl LinearizabilityCheck {
    /// Both checks, in report order.
    pub const ALL: [LinearizabilityCheck; 2] =
        [LinearizabilityCheck::Lease, LinearizabilityCheck::Ledger];

    /// The check's name in reports: `LIN-LEASE` or `LIN-LEDGER`.
    pub fn name(self) -> &'static str {
        match self {
            LinearizabilityCheck::Lease => "LIN-LEASE",
            LinearizabilityCheck::Ledger => "LIN-LEDGER",
        }
    }
}

impl fmt::Display for LinearizabilityCheck {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

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
    /// The invariants, in [`Invariant::ALL`] order.
    pub invariants: Report,
    /// The linearizability checks, in [`LinearizabilityCheck::ALL`] order.
    pub linearizability: Vec<(LinearizabilityCheck, LinearizabilityOutcome)>,
}

impl Judgement {
    /// The exit code this judgement stands for: 1 for a safety invariant or a
    /// non-linearizable history, 5 for LIVE alone, 4 when a search ran out of budget (or
    /// the history could not be read as operations) and nothing was violated, else 0.
    pub fn exit_code(&self) -> u8 {
        self.exit_code_expecting(&[])
    }

    /// As [`Judgement::exit_code`], but violations of the checks named in `expected` (a
    /// mutant's scenario expects them) do not count.
    pub fn exit_code_expecting(&self, expected: &[String]) -> u8 {
        let counts = |name: &str| !expected.iter().any(|e| e == name);
        let invariant_codes = self
            .invariants
            .violations()
            .filter(|v| counts(v.invariant.name()))
            .map(|v| match v.invariant {
                Invariant::Live => LIVENESS_VIOLATION,
                _ => SAFETY_VIOLATION,
            });
        let linearizability_codes =
            self.linearizability
                .iter()
                .map(|(check, outcome)| match outcome {
                    LinearizabilityOutcome::Checked(Verdict::Linearizable) => CLEAN,
                    LinearizabilityOutcome::Checked(Verdict::NotLinearizable(_))
                        if !counts(check.name()) =>
                    {
                        CLEAN
                    }
                    LinearizabilityOutcome::Checked(Verdict::NotLinearizable(_)) => {
                        SAFETY_VIOLATION
                    }
                    LinearizabilityOutcome::Checked(Verdict::Unknown) => INCONCLUSIVE,
                    LinearizabilityOutcome::Unreadable(_) => INCONCLUSIVE,
                });
        worst_exit(invariant_codes.chain(linearizability_codes))
    }

    /// The names of everything violated, in report order (`TOKEN`, …, `LIN-LEASE`, …);
    /// empty when clean or only inconclusive.
    pub fn violated(&self) -> Vec<&'static str> {
        let invariants = self
            .invariants
            .invariants
            .iter()
            .filter(|r| !r.passed())
            .map(|r| r.invariant.name());
        let linearizability = self
            .linearizability
            .iter()
            .filter(|(_, outcome)| {
                matches!(
                    outcome,
                    LinearizabilityOutcome::Checked(Verdict::NotLinearizable(_))
                )
            })
            .map(|(check, _)| check.name());
        invariants.chain(linearizability).collect()
    }

    /// The names of the checks that were inconclusive (budget exhausted or unreadable).
    pub fn inconclusive(&self) -> Vec<&'static str> {
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
            .map(|(check, _)| check.name())
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
    let linearizability = LinearizabilityCheck::ALL
        .into_iter()
        .map(|check| {
            let verdict = match check {
                LinearizabilityCheck::Lease => check_lease_history(history, budget),
                LinearizabilityCheck::Ledger => check_ledger_history(history, budget),
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
pub fn judge_run_folder(out: &Path, expected: &[String]) -> Result<(u8, String), HistoryError> {
    let history = History::read_jsonl_path(out.join("history.jsonl"))?;
    let judgement = judge(&history, Budget::default());
    let code = judgement.exit_code_expecting(expected);
    let mut text = judgement.to_string();
    let violated = judgement.violated();
    let verdict = match code {
        CLEAN if violated.is_empty() => "every check passed".to_owned(),
        CLEAN => format!("violated as expected: {}", violated.join(", ")),
        INCONCLUSIVE => format!(
            "inconclusive: {} ran out of budget; nothing violated",
            judgement.inconclusive().join(", ")
        ),
        LIVENESS_VIOLATION => "LIVENESS VIOLATION: LIVE".to_owned(),
        _ => format!("SAFETY VIOLATION: {}", violated.join(", ")),
    };
    text += &format!("verdict: {verdict}\n");
    Ok((code, text))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exit_codes_fold_in_design_order() {
        assert_eq!(worst_exit([]), CLEAN);
        assert_eq!(worst_exit([CLEAN, CLEAN]), CLEAN);
        assert_eq!(
            worst_exit([INCONCLUSIVE, LIVENESS_VIOLATION]),
            LIVENESS_VIOLATION
        );
        assert_eq!(
            worst_exit([LIVENESS_VIOLATION, SAFETY_VIOLATION]),
            SAFETY_VIOLATION
        );
        assert_eq!(worst_exit([SAFETY_VIOLATION, BAD_INPUT]), BAD_INPUT);
        assert_eq!(worst_exit([BAD_INPUT, HARNESS_ERROR, CLEAN]), HARNESS_ERROR);
        assert_eq!(worst_exit([INCONCLUSIVE, CLEAN]), INCONCLUSIVE);
    }
}
