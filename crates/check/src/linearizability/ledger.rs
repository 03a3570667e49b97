//! The fenced journal's ledger as a sequential object: one compare-and-set chain per session.
//!
//! Semantics (docs/contracts.md#journal and docs/checks.md#lin-ledger, the CAS log model): a ledger
//! starts empty (tip 0); `append(expected, record)` commits the record at `expected + 1` when
//! the tip is `expected` and answers `Conflict { actual: tip }` otherwise; `tip()` reads the
//! tip. Sequence numbers start at 1 and have no gaps, and nothing is ever overwritten.
//!
//! The state is the tip alone, which keeps memoisation cheap. What sits *at* each position is
//! taken from the history's final ledger instead: the record that commits at `s` stays there
//! for good, so an append of record `r` at `expected + 1 = s` can only have succeeded if the
//! final ledger holds `r` at `s`. The reader ([`super::check_ledger_history`]) computes that
//! once per operation ([`LedgerCall::Append::may_commit`]) and adds one final tip read per
//! session showing the final ledger's length, so an acknowledged append missing from the
//! chain, a record appended twice at one position or a tip that goes backwards all leave the
//! search stuck.

use super::Model;

/// A call on one session's ledger.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct LedgerInput {
    /// The session (the ledger's name); the partition key.
    pub session: String,
    /// What was called.
    pub call: LedgerCall,
}

/// The ledger calls the history records (`ledger_tip`, `ledger_append` op lines).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum LedgerCall {
    /// `Ledger::tip`: read the tip.
    Tip,
    /// `Ledger::append(expected, record)`: commit at `expected + 1` if the tip is `expected`.
    Append {
        /// The tip the compare-and-set expects.
        expected: u64,
        /// The record, in plain words (for explanations only).
        record: String,
        /// Whether the record may sit at `expected + 1` at the end: `true` when the final
        /// ledger holds exactly this record there, or when the history has no final ledger.
        /// When `false` the append cannot have committed.
        may_commit: bool,
    },
}

/// A completed ledger call's response.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum LedgerOutput {
    /// A tip read returned this sequence number (0: empty).
    Tip(u64),
    /// The append committed at this sequence number.
    Appended(u64),
    /// The compare-and-set failed: the tip was `actual`, not the expected one.
    Conflict {
        /// The tip the ledger reported.
        actual: u64,
    },
}

/// The compare-and-set ledger model, partitioned per session. State: the tip.
#[derive(Clone, Copy, Debug, Default)]
pub struct CasLedger;

impl Model for CasLedger {
    type State = u64;
    type Input = LedgerInput;
    type Output = LedgerOutput;
    type Key = String;

    fn init(&self) -> u64 {
        0
    }

    fn step(&self, tip: &u64, input: &LedgerInput, output: Option<&LedgerOutput>) -> Option<u64> {
        let tip = *tip;
        match (&input.call, output) {
            (LedgerCall::Tip, Some(LedgerOutput::Tip(seen))) => (*seen == tip).then_some(tip),
            (LedgerCall::Tip, None) => Some(tip),
            (
                LedgerCall::Append {
                    expected,
                    may_commit,
                    ..
                },
                Some(LedgerOutput::Appended(seq)),
            ) => (*may_commit && tip == *expected && *seq == expected + 1).then_some(*seq),
            (LedgerCall::Append { expected, .. }, Some(LedgerOutput::Conflict { actual })) => {
                (tip != *expected && *actual == tip).then_some(tip)
            }
            (
                LedgerCall::Append {
                    expected,
                    may_commit,
                    ..
                },
                None,
            ) => Some(if *may_commit && tip == *expected {
                tip + 1
            } else {
                tip
            }),
            _ => None,
        }
    }

    /// Our histories' times are µs of true time: seconds with ms.
    fn describe_time(&self, time: u64) -> String {
        leasesim_history::time::seconds_us(time)
    }

    fn key(&self, input: &LedgerInput) -> String {
        input.session.clone()
    }

    /// A tip read, and an append refused with a conflict.
    fn is_read_only(&self, input: &LedgerInput, output: &LedgerOutput) -> bool {
        matches!(
            (&input.call, output),
            (LedgerCall::Tip, LedgerOutput::Tip(_))
                | (LedgerCall::Append { .. }, LedgerOutput::Conflict { .. })
        )
    }

    fn describe_state(&self, tip: &u64) -> String {
        format!("tip {tip}")
    }

    /// Which rule of the CAS chain the call breaks in `tip`.
    fn describe_rejection(
        &self,
        tip: &u64,
        input: &LedgerInput,
        output: Option<&LedgerOutput>,
    ) -> String {
        let tip = *tip;
        match (&input.call, output) {
            (LedgerCall::Tip, Some(LedgerOutput::Tip(seen))) => {
                format!("the tip read returned {seen} but the ledger's tip is {tip}")
            }
            (
                LedgerCall::Append {
                    expected,
                    may_commit,
                    ..
                },
                Some(LedgerOutput::Appended(seq)),
            ) => {
                if !*may_commit {
                    format!(
                        "an acknowledged append commits for good, but the final ledger does not \
                         hold this record at seq {}",
                        expected + 1
                    )
                } else if tip != *expected {
                    format!(
                        "the append expected tip {expected}, but the ledger's tip is {tip}: a \
                         CAS on another tip must conflict, not commit"
                    )
                } else {
                    format!(
                        "an append at expected tip {expected} commits at seq {}, not {seq}",
                        expected + 1
                    )
                }
            }
            (LedgerCall::Append { expected, .. }, Some(LedgerOutput::Conflict { actual })) => {
                if tip == *expected {
                    format!(
                        "the append expected tip {expected}, which is the ledger's tip: it must \
                         commit, not conflict"
                    )
                } else {
                    format!("the conflict reported tip {actual}, but the ledger's tip is {tip}")
                }
            }
            _ => format!("a {} cannot return that", self.describe_op(input, None)),
        }
    }

    fn describe_op(&self, input: &LedgerInput, output: Option<&LedgerOutput>) -> String {
        let call = match &input.call {
            LedgerCall::Tip => format!("{}: tip", input.session),
            LedgerCall::Append {
                expected,
                record,
                may_commit,
            } => {
                let found = if *may_commit {
                    ""
                } else {
                    " (not at that position in the final ledger)"
                };
                format!(
                    "{}: append {record} at expected {expected}{found}",
                    input.session
                )
            }
        };
        let result = match output {
            None => "outcome unknown".to_string(),
            Some(LedgerOutput::Tip(seq)) => format!("returned {seq}"),
            Some(LedgerOutput::Appended(seq)) => format!("appended at {seq}"),
            Some(LedgerOutput::Conflict { actual }) => format!("conflict, actual tip {actual}"),
        };
        format!("{call}, {result}")
    }
}
