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

/// For each enum of unit variants spelled in kebab-case: `ALL`, every value in the order
/// declared; `name`, a value as files spell it (the JSON string serde writes); and a `Display`
/// that writes the name. Each row is `Variant => "spelling"`.
macro_rules! spelled {
    ($(
        $(#[$name_doc:meta])*
        $enum:ident[$count:literal] { $($variant:ident => $name:literal,)* }
    )*) => {$(
        impl $enum {
            /// Every value, in the order declared.
            pub const ALL: [$enum; $count] = [$($enum::$variant),*];

            $(#[$name_doc])*
            pub fn name(self) -> &'static str {
                match self {
                    $($enum::$variant => $name,)*
                }
            }
        }

        impl fmt::Display for $enum {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.name())
            }
        }
    )*};
}

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

spelled! {
    /// The verdict as files spell it: `pass`, `fail`, `not-judged` or `unknown` (its JSON
    /// string).
    CheckVerdict[4] {
        Pass => "pass",
        Fail => "fail",
        NotJudged => "not-judged",
        Unknown => "unknown",
    }

    /// The result as files spell it: `pass`, `fail`, `inconclusive`, `caught`,
    /// `not-caught`, `not-judged` or `not-run` (its JSON string).
    CheckResult[7] {
        Pass => "pass",
        Fail => "fail",
        Inconclusive => "inconclusive",
        Caught => "caught",
        NotCaught => "not-caught",
        NotJudged => "not-judged",
        NotRun => "not-run",
    }
}

#[cfg(test)]
mod tests {
    use super::{CheckResult, CheckVerdict};

    /// Each of `all` is written to JSON as its spelling (the one at its index) in quotes, read
    /// back from it, and named and displayed as that spelling.
    fn assert_spelled_as<T, const N: usize>(
        all: [T; N],
        spellings: [&str; N],
        name: fn(&T) -> &'static str,
    ) where
        T: serde::Serialize + serde::de::DeserializeOwned + std::fmt::Display,
        T: PartialEq + std::fmt::Debug,
    {
        for (value, spelling) in all.iter().zip(spellings) {
            let json = format!("\"{spelling}\"");
            assert_eq!(serde_json::to_string(value).unwrap(), json);
            assert_eq!(serde_json::from_str::<T>(&json).unwrap(), *value);
            assert_eq!(name(value), spelling);
            assert_eq!(value.to_string(), spelling);
        }
    }

    #[test]
    fn each_check_verdict_is_written_as_its_string_and_read_back_from_it() {
        assert_spelled_as(
            CheckVerdict::ALL,
            ["pass", "fail", "not-judged", "unknown"],
            |v| v.name(),
        );
    }

    #[test]
    fn each_check_result_is_written_as_its_string_and_read_back_from_it() {
        assert_spelled_as(
            CheckResult::ALL,
            [
                "pass",
                "fail",
                "inconclusive",
                "caught",
                "not-caught",
                "not-judged",
                "not-run",
            ],
            |r| r.name(),
        );
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
