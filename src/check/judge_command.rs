//! `leasesim judge [--json] [--budget STEPS] FILE...`: every check of docs/checks.md on each
//! history file — ours, from `run`, `replay`, `live` or another tool that writes the format
//! (docs/history.md) — judged as `run` and `replay` judge their runs
//! ([`judge_run_within`], with no violation expected), so a reviewer holding only a
//! `history.jsonl` gets the same verdict (docs/checks.md#judging-a-history-file).
//!
//! Text output, one block per file on `out`: `FILE: N operations, M history lines`, then
//! `run`'s check lines ([`RunVerdict::text`]) and its verdict line
//! ([`RunVerdict::final_line`]); after several files, one more line folds their exit codes
//! ([`fold_line`]). A file that is not a history (missing, not a regular file, a Jepsen log,
//! a truncated or corrupt line) is reported on `err` as `error: FILE:LINE: what is wrong`
//! (exit 2) and judged no further. With `--json`, `out` gets one [`FileJudgement`] JSON
//! object per line and per file instead (bad files included, with their error). Exit codes
//! follow docs/exit-codes.md: each file's as `run`'s, folded by [`Exit::worst`].

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};

use serde::Serialize;

use super::command::{CheckModel, detect, panicked, read_history};
use crate::check::jepsen::read_text;
use crate::check::judge::{RunVerdict, judge_run_within};
use crate::check::linearizability::Budget;
use crate::exit::Exit;
use crate::history::History;
use crate::report::checks::check_records;
use crate::results::record::CheckRecord;

/// What `leasesim judge` was asked to do.
#[derive(Clone, Debug)]
pub struct JudgeOptions {
    /// One JSON object per file instead of text.
    pub json: bool,
    /// The search budget of each linearizability check, per partition (as `leasesim check`'s).
    pub budget: Budget,
    /// The history files, judged and reported in this order.
    pub files: Vec<PathBuf>,
}

/// One file judged: what `--json` prints for it, on one line.
#[derive(Clone, Debug, Serialize)]
pub struct FileJudgement {
    /// The file as given on the command line.
    pub file: String,
    /// The verdict in one line, as `run` prints it and `result.json` holds it
    /// ([`RunVerdict::line`]: `clean (not judged: LIVE)`, `FAIL: FENCE, LEDGER violated`…);
    /// absent when the file could not be judged.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub verdict: Option<String>,
    /// The exit code the file stands for alone (docs/exit-codes.md).
    #[serde(rename = "exit_code", serialize_with = "exit_code")]
    pub exit: Exit,
    /// Operations (`op` lines) in the history; 0 when it could not be read.
    pub operations: usize,
    /// Every check, in report order, as `result.json` and `results.jsonl` hold them: `pass`,
    /// `fail` with its violations, `not-judged` with why, or `unknown`; empty when the file
    /// could not be judged.
    pub checks: Vec<CheckRecord>,
    /// Why the file could not be judged (bad input, or a checker's panic), naming the file
    /// and, where one is to blame, its line.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// The text block: the file's header line, the check lines and the verdict line (empty
    /// when the file could not be judged: its error goes to the error stream).
    #[serde(skip)]
    pub text: String,
}

/// Serialises an [`Exit`] as its number.
fn exit_code<S: serde::Serializer>(exit: &Exit, serializer: S) -> Result<S::Ok, S::Error> {
    serializer.serialize_u8(exit.code())
}

impl FileJudgement {
    /// A file that could not be judged: `error` says why, `exit` is 2 or 3.
    fn unjudged(file: &Path, exit: Exit, error: String) -> Self {
        FileJudgement {
            file: file.display().to_string(),
            verdict: None,
            exit,
            operations: 0,
            checks: Vec::new(),
            error: Some(error),
            text: String::new(),
        }
    }

    /// `history`, read from `file`, as `verdict` judged it.
    fn judged(file: &Path, history: &History, verdict: &RunVerdict) -> Self {
        let operations = history.ops().count();
        let text = format!(
            "{}: {operations} operations, {} history lines\n{}{}\n",
            file.display(),
            history.lines().len(),
            verdict.text,
            verdict.final_line()
        );
        FileJudgement {
            file: file.display().to_string(),
            verdict: Some(verdict.line.clone()),
            exit: verdict.exit,
            operations,
            checks: check_records(&verdict.judgement, &[], history),
            error: None,
            text,
        }
    }
}

/// Reads `file` as a history and judges it with every check, each search within `budget`.
/// Never panics: a file that is not a history is bad input (exit 2), a checker that panics
/// a harness error (exit 3).
pub fn judge_file(file: &Path, budget: Budget) -> FileJudgement {
    let history = match read(file) {
        Ok(history) => history,
        Err(error) => return FileJudgement::unjudged(file, Exit::BadInput, error),
    };
    let judged = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        judge_run_within(&history, &[], budget)
    }));
    match judged {
        Ok(verdict) => FileJudgement::judged(file, &history, &verdict),
        Err(panic) => {
            FileJudgement::unjudged(file, Exit::HarnessError, panicked(file, panic.as_ref()))
        }
    }
}

/// Reads and validates one history file as `leasesim check` does ([`read_history`]: an
/// empty or config-less file is refused too); a Jepsen history, which this reader cannot
/// read, is named as one, with the command that judges it.
fn read(file: &Path) -> Result<History, String> {
    read_history(file).map_err(|error| match jepsen_model(file) {
        Some(model) => format!(
            "{}: a Jepsen {} history, not a leasesim history (JSON lines); use `leasesim \
             check` for Jepsen histories: leasesim check {}",
            file.display(),
            model.name(),
            file.display()
        ),
        None => error,
    })
}

/// The Jepsen model (`etcd` or `kv`) of `file` when its text reads as a Jepsen history to
/// `leasesim check` ([`detect`]); `None` for anything else, or a file it cannot read.
fn jepsen_model(file: &Path) -> Option<CheckModel> {
    let text = read_text(file).ok()?;
    detect(&text).ok()
}

/// The last line after several files: how many ended with each exit code, and the exit code
/// they fold into (`verdict: 3 files (exit 0: 2, exit 1: 1) — exit 1`).
pub fn fold_line(exits: &[Exit]) -> String {
    let mut counts: BTreeMap<u8, usize> = BTreeMap::new();
    for exit in exits {
        *counts.entry(exit.code()).or_default() += 1;
    }
    let counts: Vec<String> = counts
        .iter()
        .map(|(code, files)| format!("exit {code}: {files}"))
        .collect();
    format!(
        "verdict: {} files ({}) — exit {}",
        exits.len(),
        counts.join(", "),
        Exit::worst(exits.iter().copied())
    )
}

/// Runs `leasesim judge`: judges the files one by one, in the order given, writing each
/// file's block (or JSON line) on `out` and its error, if any, on `err`. Returns the files'
/// exit codes folded ([`Exit::worst`]); 3 when `out` cannot be written.
pub fn run(options: &JudgeOptions, out: &mut dyn Write, err: &mut dyn Write) -> Exit {
    let mut exits = Vec::with_capacity(options.files.len());
    for file in &options.files {
        let judgement = judge_file(file, options.budget);
        if let Some(error) = &judgement.error {
            let _ = writeln!(err, "error: {error}");
        }
        let written = if options.json {
            serde_json::to_string(&judgement)
                .map_err(std::io::Error::other)
                .and_then(|line| writeln!(out, "{line}"))
        } else {
            out.write_all(judgement.text.as_bytes())
        };
        if let Err(error) = written {
            let _ = writeln!(err, "error: cannot write the verdict: {error}");
            return Exit::HarnessError;
        }
        exits.push(judgement.exit);
    }
    if !options.json && exits.len() > 1 && writeln!(out, "{}", fold_line(&exits)).is_err() {
        return Exit::HarnessError;
    }
    let _ = out.flush();
    Exit::worst(exits)
}
