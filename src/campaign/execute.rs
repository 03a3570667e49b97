//! One run of a campaign: run the world of a [`RunFile`], judge its history against the
//! scenario's expectations, count its coverage events, and keep it as a [`RunRecord`].

use std::time::Duration;

use super::coverage;
use crate::check::Check;
use crate::check::judge::{self, Judgement};
use crate::check::linearizability::Budget;
use crate::history::History;
use crate::report::checks::check_records;
use crate::results::record::{RunRecord, RunStatus};
use crate::sim::runfile::{Expect, RunFile};

/// Whether `expect` says `check` is to be violated (a mutant's scenario); every other check
/// must hold.
fn expects_violation(expect: &Expect, check: Check) -> bool {
    expect.violate.contains(&check)
}

/// Search steps per partition for a campaign run's linearizability checks: enough for a
/// minute of simulated contention many times over, small enough that a pathological history
/// ends as `inconclusive` in about a second instead of stalling the campaign.
pub const RUN_BUDGET: u64 = 5_000_000;

/// A finished run: its record, and its history for a shrinker or a diagram.
pub struct Executed {
    /// What the campaign keeps.
    pub record: RunRecord,
    /// The run's history (`None` after a harness error).
    pub history: Option<History>,
    /// The judgement (`None` after a harness error).
    pub judgement: Option<Judgement>,
}

/// Runs `run` with a wall-clock `timeout`, judges it against the run's expectations, and
/// returns its record; a hang, a panic or a world that cannot run is a `harness-error` record
/// naming the seed, never an `Err`.
pub fn execute(run: &RunFile, timeout: Duration, replay: String) -> Executed {
    let expect = &run.expect;
    let wall = crate::campaign::stopwatch::Stopwatch::start();
    let drawn = run
        .drawn
        .as_ref()
        .map(|d| serde_json::to_value(d).unwrap_or(serde_json::Value::Null))
        .unwrap_or(serde_json::Value::Null);
    let mut record = RunRecord {
        drawn,
        faults: run.schedule.faults.len(),
        error: None,
        ..RunRecord::harness_error(&run.scenario, run.seed, "", replay)
    };
    match crate::sim::runfile::execute(run, timeout) {
        Err(error) => {
            record.error = Some(format!("seed {}: {error}", run.seed));
            record.wall_ms = wall.elapsed_ms();
            Executed {
                record,
                history: None,
                judgement: None,
            }
        }
        Ok((history, _)) => {
            let judgement = judge::judge(&history, Budget::steps(RUN_BUDGET));
            record.checks = check_records(&judgement, &expect.violate, &history);
            record.unexpected = judgement
                .violated()
                .into_iter()
                .filter(|check| !expects_violation(expect, *check))
                .collect();
            record.status = status(&judgement, &record.unexpected);
            record.coverage = coverage::coverage(&history);
            record.operations = history.ops().count();
            record.wall_ms = wall.elapsed_ms();
            Executed {
                record,
                history: Some(history),
                judgement: Some(judgement),
            }
        }
    }
}

/// The run's status: a violation only counts when the scenario does not expect it.
fn status(judgement: &Judgement, unexpected: &[Check]) -> RunStatus {
    if unexpected.iter().any(|check| !check.is_liveness()) {
        RunStatus::Violation
    } else if !unexpected.is_empty() {
        RunStatus::Liveness
    } else if !judgement.inconclusive().is_empty() {
        RunStatus::Inconclusive
    } else {
        RunStatus::Clean
    }
}
