//! The report of a `leasesim live` invocation: its runs as a campaign's records
//! (`results.jsonl`, `campaign.json`), rendered by [`crate::report`] into `report.md`,
//! `summary.json` and `junit.xml` exactly as a campaign's (nothing is judged here: each record
//! carries the judgement `leasesim run`'s judge made).

use std::path::Path;

use crate::check::judge::RunVerdict;
use crate::history::History;
use crate::report::{ReportData, ScenarioInfo};
use crate::results::record::{CampaignMeta, RECORD_VERSION, RunRecord, RunStatus};
use crate::sim::runfile::RunFile;

/// The record of one judged live run.
pub fn record(
    run: &RunFile,
    history: &History,
    verdict: &RunVerdict,
    wall_ms: u64,
    replay: String,
) -> RunRecord {
    let expect = &run.expect;
    let unexpected: Vec<_> = verdict
        .judgement
        .violated()
        .into_iter()
        .filter(|check| !expect.violate.contains(check))
        .collect();
    let status = if unexpected.iter().any(|check| !check.is_liveness()) {
        RunStatus::Violation
    } else if !unexpected.is_empty() {
        RunStatus::Liveness
    } else if !verdict.judgement.inconclusive().is_empty() {
        RunStatus::Inconclusive
    } else {
        RunStatus::Clean
    };
    RunRecord {
        v: RECORD_VERSION,
        scenario: run.scenario.clone(),
        seed: run.seed,
        status,
        unexpected,
        checks: crate::report::checks::check_records(&verdict.judgement, &expect.violate, history),
        coverage: crate::campaign::coverage::coverage(history),
        drawn: run
            .drawn
            .as_ref()
            .and_then(|d| serde_json::to_value(d).ok())
            .unwrap_or(serde_json::Value::Null),
        faults: run.schedule.faults.len(),
        operations: history.ops().count(),
        wall_ms,
        error: None,
        replay,
    }
}

/// Writes `campaign.json`, `results.jsonl`, `report.md`, `summary.json` and `junit.xml` into
/// `out` for `records` (seeds from `first_seed` on, one per run, wrapping past `u64::MAX` as
/// the runs' seeds do), `config_hash` naming their run files (16 hex digits, as a
/// campaign's); returns the verdict line.
///
/// # Errors
/// A file cannot be written.
pub fn write(
    out: &Path,
    records: Vec<RunRecord>,
    scenarios: Vec<ScenarioInfo>,
    first_seed: u64,
    mutant: Option<String>,
    config_hash: String,
) -> Result<String, String> {
    let names: Vec<String> = scenarios.iter().map(|s| s.name.clone()).collect();
    let meta = CampaignMeta {
        v: RECORD_VERSION,
        seeds: seeds(first_seed, records.len() as u64),
        sims: "leasesim live".to_owned(),
        scenarios: names,
        shard: None,
        merged: false,
        mutant,
        backend: None,
        binary: "leasesim".to_owned(),
        git_commit: crate::campaign::driver::git_commit(Path::new(".")),
        config_hash,
        cargo_lock_hash: crate::campaign::driver::cargo_lock_hash(),
    };
    crate::report::write_campaign_file(out, &meta, &scenarios, None).map_err(|e| e.to_string())?;
    let mut jsonl = String::new();
    for record in &records {
        jsonl.push_str(&serde_json::to_string(record).map_err(|e| e.to_string())?);
        jsonl.push('\n');
    }
    let results = out.join(crate::report::RESULTS_FILE);
    crate::input::replace(&results, jsonl.as_bytes()).map_err(|e| e.to_string())?;
    let data = ReportData::read(out).map_err(|e| e.to_string())?;
    let (markdown, summary, junit) = crate::report::render_text(&data);
    for (name, text) in [
        ("report.md", markdown),
        ("summary.json", summary),
        ("junit.xml", junit),
    ] {
        crate::input::replace(&out.join(name), text.as_bytes()).map_err(|e| e.to_string())?;
    }
    Ok(data.summary().verdict)
}

/// The seeds of `runs` runs from `first` as `campaign.json` records them: `first..end`; when
/// they wrap past `u64::MAX` (the runs' seeds are `first.wrapping_add(k)`), no `A..B` can say
/// so, and they are written in the `a + b` form a report reads as seeds with no plan.
fn seeds(first: u64, runs: u64) -> String {
    match first.checked_add(runs) {
        Some(end) => format!("{first}..{end}"),
        None => format!("{first} + {runs} runs in all, wrapping to 0 past u64::MAX"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_seeds_of_runs_that_wrap_past_u64_max_are_written_without_overflow() {
        assert_eq!(seeds(7, 3), "7..10");
        assert_eq!(
            seeds(u64::MAX - 1, 1),
            format!("{}..{}", u64::MAX - 1, u64::MAX)
        );
        let wrapped = seeds(u64::MAX, 2);
        assert!(
            wrapped.starts_with(&u64::MAX.to_string()) && wrapped.contains('+'),
            "{wrapped}"
        );
    }

    #[test]
    fn a_report_of_a_run_at_seed_u64_max_is_written() {
        let dir = tempfile::tempdir().unwrap();
        let records = [u64::MAX, 0]
            .into_iter()
            .map(|seed| RunRecord::harness_error("live", seed, "test", "again".into()))
            .collect();
        let scenarios = vec![ScenarioInfo {
            name: "live".into(),
            about: "live mode".into(),
            coverage: Vec::new(),
            violate: Vec::new(),
            coverage_within_seeds: std::collections::BTreeMap::new(),
            left_out: None,
        }];
        let verdict = write(
            dir.path(),
            records,
            scenarios,
            u64::MAX,
            None,
            "0".repeat(16),
        );
        assert!(verdict.is_ok(), "{verdict:?}");
    }
}
