//! What a check concluded, as types: [`CheckVerdict`] over one run (the judge's answer,
//! `results.jsonl`'s and `result.json`'s `verdict` of each check) and [`CheckResult`] over
//! a scenario's runs (`summary.json`'s `result`, the cells and rows of report.md, report.html
//! and junit.xml). The judge produces the first, the report folds runs into the second, and
//! every reader matches on them — never on their strings (docs/campaigns.md#check-results).
//!
//! Each serialises as its [`name`](CheckVerdict::name), in kebab-case, and reads back only
//! from it; an unknown string is an error naming the accepted ones.

use std::fmt;

use serde::{Deserialize, Serialize};

/// One check's verdict over one run: what the judge concluded.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Debug, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum CheckVerdict {
    /// `pass`: judged, and nothing violated.
    Pass,
    /// `fail`: violated.
    Fail,
    /// `not-judged`: the history had nothing for the check to judge; never a pass, and no
    /// change to the exit code by itself.
    NotJudged,
    /// `unknown`: a search ran out of budget, or the history could not be read as
    /// operations; nothing violated (exit 4 if nothing else is).
    Unknown,
}

impl CheckVerdict {
    /// Every verdict, in the order above.
    pub const ALL: [CheckVerdict; 4] = [
        CheckVerdict::Pass,
        CheckVerdict::Fail,
        CheckVerdict::NotJudged,
        CheckVerdict::Unknown,
    ];

    /// The verdict as files spell it: `pass`, `fail`, `not-judged` or `unknown` (its JSON
    /// string).
    pub fn name(self) -> &'static str {
        match self {
            CheckVerdict::Pass => "pass",
            CheckVerdict::Fail => "fail",
            CheckVerdict::NotJudged => "not-judged",
            CheckVerdict::Unknown => "unknown",
        }
    }
}

impl fmt::Display for CheckVerdict {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// One check's result over a scenario's runs: its runs' [`CheckVerdict`]s folded, against
/// whether the scenario expects the check violated (a mutant's scenario).
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Debug, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum CheckResult {
    /// `pass`: judged in some run, never failed, never inconclusive.
    Pass,
    /// `fail`: failed in some run, and the scenario expects it to hold.
    Fail,
    /// `inconclusive`: never failed, but a search ran out of budget in some run.
    Inconclusive,
    /// `caught`: the scenario expects it violated, and some run violated it.
    Caught,
    /// `not-caught`: the scenario expects it violated, and no run that made it did.
    NotCaught,
    /// `not-judged`: no run had anything for it to judge.
    NotJudged,
    /// `not-run`: no run made it.
    NotRun,
}

impl CheckResult {
    /// Every result, in the order above.
    pub const ALL: [CheckResult; 7] = [
        CheckResult::Pass,
        CheckResult::Fail,
        CheckResult::Inconclusive,
        CheckResult::Caught,
        CheckResult::NotCaught,
        CheckResult::NotJudged,
        CheckResult::NotRun,
    ];

    /// The result as files spell it: `pass`, `fail`, `inconclusive`, `caught`,
    /// `not-caught`, `not-judged` or `not-run` (its JSON string).
    pub fn name(self) -> &'static str {
        match self {
            CheckResult::Pass => "pass",
            CheckResult::Fail => "fail",
            CheckResult::Inconclusive => "inconclusive",
            CheckResult::Caught => "caught",
            CheckResult::NotCaught => "not-caught",
            CheckResult::NotJudged => "not-judged",
            CheckResult::NotRun => "not-run",
        }
    }
}

impl fmt::Display for CheckResult {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::{CheckResult, CheckVerdict};

    #[test]
    fn each_check_verdict_is_written_as_its_string_and_read_back_from_it() {
        let spelled = [
            (CheckVerdict::Pass, "pass"),
            (CheckVerdict::Fail, "fail"),
            (CheckVerdict::NotJudged, "not-judged"),
            (CheckVerdict::Unknown, "unknown"),
        ];
        assert_eq!(spelled.map(|(v, _)| v), CheckVerdict::ALL);
        for (verdict, name) in spelled {
            let json = format!("\"{name}\"");
            assert_eq!(serde_json::to_string(&verdict).unwrap(), json);
            assert_eq!(
                serde_json::from_str::<CheckVerdict>(&json).unwrap(),
                verdict
            );
            assert_eq!(verdict.name(), name);
            assert_eq!(verdict.to_string(), name);
        }
    }

    #[test]
    fn each_check_result_is_written_as_its_string_and_read_back_from_it() {
        let spelled = [
            (CheckResult::Pass, "pass"),
            (CheckResult::Fail, "fail"),
            (CheckResult::Inconclusive, "inconclusive"),
            (CheckResult::Caught, "caught"),
            (CheckResult::NotCaught, "not-caught"),
            (CheckResult::NotJudged, "not-judged"),
            (CheckResult::NotRun, "not-run"),
        ];
        assert_eq!(spelled.map(|(r, _)| r), CheckResult::ALL);
        for (result, name) in spelled {
            let json = format!("\"{name}\"");
            assert_eq!(serde_json::to_string(&result).unwrap(), json);
            assert_eq!(serde_json::from_str::<CheckResult>(&json).unwrap(), result);
            assert_eq!(result.name(), name);
            assert_eq!(result.to_string(), name);
        }
    }

    #[test]
    fn an_unknown_check_verdict_is_refused_naming_the_accepted_ones() {
        for wrong in ["\"PASS\"", "\"not_judged\"", "\"inconclusive\"", "\"\""] {
            let error = serde_json::from_str::<CheckVerdict>(wrong)
                .unwrap_err()
                .to_string();
            assert!(
                error.contains("expected one of `pass`, `fail`, `not-judged`, `unknown`"),
                "{wrong}: {error}"
            );
        }
    }

    #[test]
    fn an_unknown_check_result_is_refused_naming_the_accepted_ones() {
        for wrong in ["\"Pass\"", "\"unknown\"", "\"not_run\""] {
            let error = serde_json::from_str::<CheckResult>(wrong)
                .unwrap_err()
                .to_string();
            assert!(
                error.contains(
                    "expected one of `pass`, `fail`, `inconclusive`, `caught`, `not-caught`, \
                     `not-judged`, `not-run`"
                ),
                "{wrong}: {error}"
            );
        }
    }
}
