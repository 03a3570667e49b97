//! The exit codes of every command (docs/exit-codes.md), as one type.
//!
//! When several apply, [`Exit::worst`] picks the first in the order 3, 2, 1, 5, 6, 4, then 0.

use std::fmt;

/// How a command ended, as its process exit code ([`Exit::code`]).
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Debug, Default)]
pub enum Exit {
    /// 0: every check passed (or judged nothing and found nothing wrong).
    #[default]
    Clean,
    /// 1: a safety invariant or a linearizability check failed.
    SafetyViolation,
    /// 2: bad input or usage (a malformed file, an unknown name, a bad flag).
    BadInput,
    /// 3: the harness itself failed (a panic, a hang, nondeterminism).
    HarnessError,
    /// 4: a check ran out of budget (or could not read its input) and found no violation.
    Inconclusive,
    /// 5: the liveness invariant (LIVE) failed and no safety check did.
    LivenessViolation,
    /// 6: a campaign, merge or report covers fewer runs than it was planned for.
    Incomplete,
}

impl Exit {
    /// Every exit, in precedence order: the first that applies wins ([`Exit::worst`]).
    pub const PRECEDENCE: [Exit; 7] = [
        Exit::HarnessError,
        Exit::BadInput,
        Exit::SafetyViolation,
        Exit::LivenessViolation,
        Exit::Incomplete,
        Exit::Inconclusive,
        Exit::Clean,
    ];

    /// The process exit code: 0 … 6.
    pub fn code(self) -> u8 {
        match self {
            Exit::Clean => 0,
            Exit::SafetyViolation => 1,
            Exit::BadInput => 2,
            Exit::HarnessError => 3,
            Exit::Inconclusive => 4,
            Exit::LivenessViolation => 5,
            Exit::Incomplete => 6,
        }
    }

    /// The exit whose [`Exit::code`] is `code`, if any.
    pub fn from_code(code: u8) -> Option<Exit> {
        Exit::PRECEDENCE
            .into_iter()
            .find(|exit| exit.code() == code)
    }

    /// Folds exits: the first of `exits` in [`Exit::PRECEDENCE`] order (3, 2, 1, 5, 6, 4);
    /// [`Exit::Clean`] when there are none.
    pub fn worst(exits: impl IntoIterator<Item = Exit>) -> Exit {
        exits
            .into_iter()
            .min_by_key(|exit| Exit::PRECEDENCE.iter().position(|e| e == exit))
            .unwrap_or(Exit::Clean)
    }
}

impl From<Exit> for std::process::ExitCode {
    fn from(exit: Exit) -> Self {
        std::process::ExitCode::from(exit.code())
    }
}

impl fmt::Display for Exit {
    /// The code as a number (`1`).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.code())
    }
}

#[cfg(test)]
mod tests {
    use super::Exit::{self, *};

    #[test]
    fn codes_are_the_designs() {
        let codes: Vec<(Exit, u8)> = Exit::PRECEDENCE.iter().map(|e| (*e, e.code())).collect();
        assert_eq!(
            codes,
            [
                (HarnessError, 3),
                (BadInput, 2),
                (SafetyViolation, 1),
                (LivenessViolation, 5),
                (Incomplete, 6),
                (Inconclusive, 4),
                (Clean, 0),
            ]
        );
        for exit in Exit::PRECEDENCE {
            assert_eq!(Exit::from_code(exit.code()), Some(exit));
        }
        assert_eq!(Exit::from_code(7), None);
    }

    #[test]
    fn worst_folds_in_design_order() {
        assert_eq!(Exit::worst([]), Clean);
        assert_eq!(Exit::worst([Clean, Clean]), Clean);
        assert_eq!(Exit::worst([Inconclusive, Clean]), Inconclusive);
        assert_eq!(Exit::worst([Inconclusive, Incomplete]), Incomplete);
        assert_eq!(
            Exit::worst([Incomplete, LivenessViolation]),
            LivenessViolation
        );
        assert_eq!(
            Exit::worst([Inconclusive, LivenessViolation]),
            LivenessViolation
        );
        assert_eq!(
            Exit::worst([LivenessViolation, SafetyViolation]),
            SafetyViolation
        );
        assert_eq!(Exit::worst([SafetyViolation, BadInput]), BadInput);
        assert_eq!(Exit::worst([BadInput, HarnessError, Clean]), HarnessError);
    }
}
