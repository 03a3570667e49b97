//! One run outside a campaign (`leasesim run`, `leasesim replay`): run a [`RunFile`] into its
//! folder, judge its history against the run file's expectations, and write `result.json`
//! with the verdict, every check's result and the schedule the world ran, and `timeline.svg`
//! (the history drawn, the first failing check's evidence highlighted:
//! [`crate::report::timeline`]).
//!
//! `result.json` (schema `v: 2`):
//! ```json
//! {"v": 2, "verdict": "FAIL: EXCL violated", "exit_code": 1,
//!  "checks": [{"name": "TOKEN", "checks": 4, "expected_violation": false, "verdict": "pass",
//!              "violations": []},
//!             {"name": "LIVE", "checks": 0, "expected_violation": false,
//!              "verdict": "not-judged", "not_judged": "no contended session …",
//!              "violations": []}, …],
//!  "drawn": {…},
//!  "seed": 7, "replicas": 3, "duration_ms": 40000, "ended_ms": 52000,
//!  "schedule": {"v": 1, "faults": [{"at_ms": 2000, "fault": "pause", …}]},
//!  "faults": 3, "script": null, "history_lines": 812, "operations": 301,
//!  "replay": "leasesim replay runs/latest/run.json", "scenario": "swarm-freezes"}
//! ```
//! v1 (before issue 20) had no verdict, no checks and `"schedule": null`.

use std::path::Path;
use std::time::Duration;

use serde::Serialize;

use crate::check::judge::{self, RunVerdict};
use crate::history::History;
use crate::report::checks::check_records;
use crate::report::timeline::{self, Highlight};
use crate::results::record::CheckRecord;
use crate::sim::runfile::{self, Drawn, RunFile};
use crate::sim::runner::{self, RunResult, RunnerError};

/// Schema version of `result.json`.
pub const RESULT_VERSION: u32 = 2;

/// `result.json`: what the world did, and how it was judged.
#[derive(Clone, Debug, Serialize)]
pub struct ResultFile {
    /// Schema version ([`RESULT_VERSION`]).
    pub v: u32,
    /// The verdict in one line ([`RunVerdict::line`]).
    pub verdict: String,
    /// The exit code it stands for (docs/exit-codes.md).
    pub exit_code: u8,
    /// Every check, in report order: `pass`, `fail` with its violations, `not-judged` with
    /// why, or `unknown` (as in a campaign's `results.jsonl`).
    pub checks: Vec<CheckRecord>,
    /// The swarm options the seed drew, if the run has a swarm profile (the `schedule` below
    /// was drawn from them).
    pub drawn: Option<Drawn>,
    /// What the world did, the schedule it ran included.
    #[serde(flatten)]
    pub run: RunResult,
}

/// A run made and judged.
pub struct Judged {
    /// What `result.json` holds.
    pub result: ResultFile,
    /// The verdict, with every check's line.
    pub verdict: RunVerdict,
}

/// Runs `run` into `out` ([`runfile::execute_to`]), judges it against `run.expect` and writes
/// `out/result.json`.
///
/// # Errors
/// As [`runfile::execute_to`]; [`RunnerError::Harness`] when `result.json` cannot be written.
pub fn run_into(run: &RunFile, out: &Path, timeout: Duration) -> Result<Judged, RunnerError> {
    // Held until the run is written and judged: a second command on this --out is refused.
    let _lock = runner::lock_out(out)?;
    let (result, history) = runfile::execute_to(run, out, timeout)?;
    let verdict = judge::judge_run(&history, &run.expect.violate);
    let checks = check_records(&verdict.judgement, &run.expect.violate, &history);
    write_timeline(
        &out.join(runner::TIMELINE_FILE),
        &history,
        &format!("{} seed {}: {}", run.scenario, run.seed, verdict.line),
        &timeline::highlight_of_records(&checks, &history),
    )?;
    let result = ResultFile {
        v: RESULT_VERSION,
        verdict: verdict.line.clone(),
        exit_code: verdict.exit.code(),
        checks,
        drawn: run.drawn.clone(),
        run: result,
    };
    runner::write_result(out, &result)?;
    Ok(Judged { result, verdict })
}

/// Draws `history`'s timeline ([`timeline::render`]) titled `title` into `path`: what `run`,
/// `replay` and the campaign's counterexamples write.
///
/// # Errors
/// [`RunnerError::Harness`] when it cannot be written.
pub fn write_timeline(
    path: &Path,
    history: &History,
    title: &str,
    highlight: &Highlight,
) -> Result<(), RunnerError> {
    crate::input::replace(path, timeline::render(history, title, highlight).as_bytes())
        .map_err(|e| RunnerError::Harness(e.to_string()))
}
