//! `report.md`: for a reviewer. First screen: header, verdict, reproduction key, the
//! scenario × check matrix, the mutation score, unmet expectations and missing runs
//! ([`super::overview`]). Then, folded, the checks per scenario and the coverage table; then,
//! visible, harness errors, failing runs, each shrunk violation, and the mutant detection
//! table with each mutant's counterexample: both kinds of counterexample rendered one way
//! ([`super::counterexamples`]: check and rule, messages, evidence, replay command, timeline
//! — a mutant's beside its clean twin's).

use std::fmt::Write as _;

use super::ReportData;
use super::counterexamples;
use super::overview::{self, Anchors, FAILING_RUNS_ANCHOR, HARNESS_ERRORS_ANCHOR, anchor_line};
use super::summary::{
    CheckSummary, LEFT_OUT_INTRO, PENDING_COVERAGE_INTRO, ScenarioSummary, Summary, and_more,
    order_events, plural, status_name,
};
use super::text::{cell, runs};
use leasesim_check::{Check, CheckResult, CheckVerdict};
use leasesim_results::CoverageEvent;
use leasesim_results::record::RunStatus;

/// Failing runs listed at most (the rest are counted).
const MAX_FAILING_RUNS: usize = 50;

pub(super) fn render(data: &ReportData, summary: &Summary) -> String {
    let mut out = String::new();
    let meta = &summary.meta;
    let _ = writeln!(out, "# leasesim campaign report\n");
    out.push_str("| | |\n|---|---|\n");
    let rows: [(&str, String); 8] = [
        ("seeds", seeds_line(summary)),
        (
            "scenarios",
            format!("{} from `{}`", summary.scenarios.len(), meta.sims),
        ),
        ("git commit", format!("`{}`", meta.git_commit)),
        ("config hash", format!("`{}`", meta.config_hash)),
        ("Cargo.lock hash", format!("`{}`", meta.cargo_lock_hash)),
        ("shard", meta.shard.clone().unwrap_or_else(|| "—".into())),
        (
            "mutant",
            meta.mutant.clone().unwrap_or_else(|| "none".into()),
        ),
        ("runs", runs_line(summary)),
    ];
    for (key, value) in rows {
        let _ = writeln!(out, "| {key} | {} |", cell(&value));
    }
    if let Some(backend) = &meta.backend {
        let _ = writeln!(out, "| backend | `{}` (every scenario's) |", cell(backend));
    }
    let _ = writeln!(
        out,
        "\n**Verdict: {} (exit {})**\n",
        summary.verdict, summary.exit_code
    );

    // The first screen: whether the campaign can be trusted, and where to look if not.
    let anchors = Anchors::of(data);
    overview::reproduction_key(&mut out, meta);
    overview::matrix(&mut out, summary, &anchors);
    overview::mutation_score(&mut out, summary);
    expectations(&mut out, summary);
    missing(&mut out, summary);
    // Folded: every scenario's numbers, for whoever wants them.
    checks(&mut out, summary);
    coverage(&mut out, data, summary);
    // Visible: what went wrong, with the commands that rerun it.
    harness_errors(&mut out, summary);
    failing_runs(&mut out, data);
    counterexamples::violations(&mut out, data, &anchors);
    mutants(&mut out, data, summary);
    out
}

/// The detection table of a `--mutants` campaign (its score is on the first screen), then
/// each mutant's counterexample.
fn mutants(out: &mut String, data: &ReportData, summary: &Summary) {
    if summary.mutation_score.is_none() {
        return;
    }
    out.push_str("## Mutants\n\n");
    out.push_str(
        "| mutant | what is wrong | killed by | seeds to detection | runs | wall time | shrunk to (faults, ops) |\n\
         |---|---|---|---:|---:|---:|---|\n",
    );
    for d in &data.mutants {
        let dash = || "—".to_owned();
        let _ = writeln!(
            out,
            "| `{}` | {} | {} | {} | {} | {} | {} |",
            d.mutant,
            cell(&d.about),
            if d.killed {
                cell(&d.killed_by)
            } else {
                format!("**SURVIVED** ({})", cell(&d.killed_by))
            },
            d.seeds_to_detection.map_or_else(dash, |n| n.to_string()),
            d.runs_to_detection.map_or_else(dash, |n| n.to_string()),
            d.wall_ms_to_detection
                .map_or_else(dash, leasesim_history::time::seconds_ms),
            match (&d.shrunk, &d.run_file) {
                (Some((faults, ops)), Some(file)) => format!("{faults}, {ops} (`{file}`)"),
                _ => dash(),
            },
        );
    }
    out.push('\n');
    counterexamples::mutants(out, data);
}

/// The runs an incomplete campaign lacks (nothing when it has every planned run).
fn missing(out: &mut String, summary: &Summary) {
    if summary.missing_runs == 0 && summary.runs > 0 {
        return;
    }
    out.push_str("## Missing runs\n\n");
    match summary.planned_runs {
        Some(planned) => {
            let _ = writeln!(
                out,
                "{} of {planned} planned runs have no record:\n",
                summary.missing_runs
            );
        }
        None => out.push_str("No run finished.\n\n"),
    }
    for line in &summary.missing {
        let _ = writeln!(out, "- {}", cell(line));
    }
    if !summary.missing.is_empty() {
        out.push('\n');
    }
}

/// The seeds: as planned (`0..10`); for a budget campaign the budget and the seeds that ran
/// ([`Summary::seeds_run`]: `budget 50s; ran 0..12; 12 on 17 of 40 scenarios`).
pub(super) fn seeds_line(summary: &Summary) -> String {
    let planned = &summary.meta.seeds;
    if planned.starts_with("budget") {
        format!("{planned}; ran {}", summary.seeds_run)
    } else {
        planned.clone()
    }
}

/// `1 run`, `2 runs`.
pub(super) fn runs_line(summary: &Summary) -> String {
    let parts: Vec<String> = RunStatus::ALL
        .into_iter()
        .map(|s| {
            let name = status_name(s);
            format!(
                "{} {name}",
                summary.by_status.get(name).copied().unwrap_or(0)
            )
        })
        .collect();
    format!("{} ({})", summary.runs, parts.join(", "))
}

/// Every scenario's checks in full (what each judged, its violations, failing and
/// inconclusive runs, and why it judged nothing), folded: the matrix above sums them up.
fn checks(out: &mut String, summary: &Summary) {
    out.push_str("## Checks\n\n");
    if summary.scenarios.is_empty() {
        out.push_str("No scenario.\n\n");
        return;
    }
    let _ = write!(
        out,
        "<details><summary>Per scenario: what it is about, and each check's runs, checks \
         made, violations, failing and inconclusive runs ({})</summary>\n\n",
        plural(summary.scenarios.len(), "scenario", "scenarios")
    );
    for scenario in &summary.scenarios {
        scenario_checks(out, scenario);
    }
    out.push_str("</details>\n\n");
}

/// One scenario's check table, with what it is about and its runs.
fn scenario_checks(out: &mut String, scenario: &ScenarioSummary) {
    let _ = write!(out, "### {}\n\n", scenario.name);
    if !scenario.about.is_empty() {
        let _ = write!(out, "{}\n\n", scenario.about.trim());
    }
    let expected: Vec<&str> = scenario
        .checks
        .iter()
        .filter(|c| c.expected_violation)
        .map(|c| c.name.name())
        .collect();
    let _ = writeln!(
        out,
        "{} ({}); expected violations: {}.\n",
        runs(scenario.runs),
        scenario
            .by_status
            .iter()
            .filter(|(_, n)| **n > 0)
            .map(|(s, n)| format!("{n} {s}"))
            .collect::<Vec<_>>()
            .join(", "),
        if expected.is_empty() {
            "none".to_owned()
        } else {
            expected.join(", ")
        }
    );
    if scenario.checks.is_empty() {
        out.push_str("No check was made.\n\n");
        return;
    }
    out.push_str(
        "| check | runs | checks | violations | failing runs | inconclusive runs | result |\n\
         |---|---:|---:|---:|---:|---:|---|\n",
    );
    for check in &scenario.checks {
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {} | {} | {} |",
            check.name,
            check.runs,
            check.checks,
            check.violations,
            check.failed_runs,
            check.inconclusive_runs,
            result_text(check)
        );
    }
    out.push('\n');
}

/// A check's result in words, with why it judged nothing where it did not.
fn result_text(check: &CheckSummary) -> String {
    let why = check.not_judged.as_deref().unwrap_or("nothing to judge");
    match check.result {
        CheckResult::Fail => "**FAIL**".to_owned(),
        CheckResult::NotCaught => "**NOT CAUGHT** (expected violation never seen)".to_owned(),
        CheckResult::Caught => "caught (expected)".to_owned(),
        CheckResult::NotJudged => format!("not judged ({})", cell(why)),
        CheckResult::Pass if check.not_judged_runs > 0 => format!(
            "pass (not judged in {} of {}: {})",
            check.not_judged_runs,
            runs(check.runs),
            cell(why)
        ),
        CheckResult::Pass | CheckResult::Inconclusive | CheckResult::NotRun => {
            check.result.name().to_owned()
        }
    }
}

/// Every coverage event any scenario counts, in report order.
fn coverage_events(summary: &Summary) -> Vec<String> {
    let mut events: Vec<String> = Vec::new();
    for scenario in &summary.scenarios {
        for event in scenario.coverage.keys() {
            if !events.contains(event) {
                events.push(event.clone());
            }
        }
    }
    order_events(&mut events);
    events
}

/// The coverage table, folded (a column per scenario is too wide for a first look, and an
/// expected event never reached is on the first screen anyway, under Expectations), then
/// what the events mean.
fn coverage(out: &mut String, data: &ReportData, summary: &Summary) {
    out.push_str("## Coverage\n\n");
    if summary.scenarios.is_empty() {
        out.push_str("No scenario.\n\n");
        return;
    }
    let events = coverage_events(summary);
    let _ = write!(
        out,
        "<details><summary>Per event and scenario: how often each of {} events happened in \
         {}</summary>\n\n",
        events.len(),
        plural(summary.scenarios.len(), "scenario", "scenarios")
    );
    out.push_str(
        "Events reached, summed over each scenario's runs. **0 ✗** marks an event the \
         scenario expects but never reached; ✓ one it expects and reached; 0 (within N \
         seeds) one it expects within more seeds than the campaign ran.\n\n",
    );
    coverage_table(out, data, summary, &events);
    out.push_str("\n</details>\n\n<details><summary>What the events mean</summary>\n\n");
    for (name, meaning) in CoverageEvent::ALL.map(|e| (e.name(), e.about())) {
        let _ = writeln!(out, "- `{name}`: {meaning}");
    }
    out.push_str("\n</details>\n\n");
}

/// The table of `events` (rows) × scenarios (columns).
fn coverage_table(out: &mut String, data: &ReportData, summary: &Summary, events: &[String]) {
    out.push_str("| event |");
    for scenario in &summary.scenarios {
        let _ = write!(out, " {} |", cell(&scenario.name));
    }
    out.push_str("\n|---|");
    for _ in &summary.scenarios {
        out.push_str("---:|");
    }
    out.push('\n');
    for event in events {
        let _ = write!(out, "| {event} |");
        for scenario in &summary.scenarios {
            let count = scenario.coverage.get(event).copied().unwrap_or(0);
            let expected = scenario_expects(data, &scenario.name, event);
            let pending = scenario.pending_coverage.iter().find(|p| &p.event == event);
            let text = match (expected, count) {
                (true, 0) if let Some(pending) = pending => {
                    format!("0 (within {} seeds)", pending.within_seeds)
                }
                (true, 0) => "**0 ✗**".to_owned(),
                (true, n) => format!("{n} ✓"),
                (false, n) => n.to_string(),
            };
            let _ = write!(out, " {text} |");
        }
        out.push('\n');
    }
}

/// Whether scenario `name` expects coverage event `event` (`campaign.json`).
fn scenario_expects(data: &ReportData, name: &str, event: &str) -> bool {
    data.campaign
        .scenarios
        .iter()
        .any(|s| s.name == name && s.coverage.iter().any(|e| e == event))
}

fn expectations(out: &mut String, summary: &Summary) {
    let unmet: Vec<String> = summary
        .scenarios
        .iter()
        .flat_map(|s| {
            let violations = s.unreached_violations.iter().map(move |check| {
                format!(
                    "- **{}**: expects **{check}** to be violated, but no run violated it. \
                     This fails the campaign (exit 1): the scenario's expectation is wrong, \
                     or its mutant survived.",
                    s.name
                )
            });
            let coverage = s.unreached_coverage.iter().map(move |event| {
                format!(
                    "- {}: expects coverage event `{event}`, never reached.",
                    s.name
                )
            });
            violations.chain(coverage)
        })
        .collect();
    if !unmet.is_empty() {
        out.push_str("## Expectations not met\n\n");
        for line in unmet {
            out.push_str(&line);
            out.push('\n');
        }
        out.push('\n');
    }
    // The notes: expected events a campaign this short is not expected to reach yet.
    noted_list(
        out,
        "Coverage for a longer campaign",
        PENDING_COVERAGE_INTRO,
        &summary.notes,
    );
    // The kinds no run drew, their backends lacking what they need.
    noted_list(
        out,
        "Fault kinds left out",
        LEFT_OUT_INTRO,
        &summary.left_out,
    );
}

/// A section `## heading`, its `intro` paragraph and a bullet per item, each ending in a
/// full stop; nothing when there are no items.
fn noted_list(out: &mut String, heading: &str, intro: &str, items: &[String]) {
    if items.is_empty() {
        return;
    }
    let _ = write!(out, "## {heading}\n\n{intro}\n\n");
    for item in items {
        let _ = writeln!(out, "- {item}.");
    }
    out.push('\n');
}

fn harness_errors(out: &mut String, summary: &Summary) {
    if summary.harness_errors.is_empty() {
        return;
    }
    out.push_str("## Harness errors\n\n");
    out.push_str(&anchor_line(HARNESS_ERRORS_ANCHOR));
    out.push_str("| scenario | seed | error | replay |\n|---|---:|---|---|\n");
    for error in &summary.harness_errors {
        let _ = writeln!(
            out,
            "| {} | {} | {} | `{}` |",
            cell(&error.scenario),
            error.seed,
            cell(&error.error),
            cell(&error.replay)
        );
    }
    out.push('\n');
}

fn failing_runs(out: &mut String, data: &ReportData) {
    let failing: Vec<_> = data
        .results
        .iter()
        .filter(|r| {
            matches!(
                r.status,
                RunStatus::Violation | RunStatus::Liveness | RunStatus::Inconclusive
            )
        })
        .collect();
    if failing.is_empty() {
        return;
    }
    out.push_str("## Failing and inconclusive runs\n\n");
    out.push_str(&anchor_line(FAILING_RUNS_ANCHOR));
    out.push_str(
        "| scenario | seed | status | checks | first violation | replay |\n\
         |---|---:|---|---|---|---|\n",
    );
    for record in failing.iter().take(MAX_FAILING_RUNS) {
        let names = if record.unexpected.is_empty() {
            let unknown: Vec<Check> = record
                .checks
                .iter()
                .filter(|c| c.verdict == CheckVerdict::Unknown)
                .map(|c| c.name)
                .collect();
            Check::list(&unknown)
        } else {
            Check::list(&record.unexpected)
        };
        let first = record
            .checks
            .iter()
            .filter(|c| record.unexpected.contains(&c.name))
            .flat_map(|c| c.violations.iter())
            .next()
            .map_or(String::new(), |v| v.message.clone());
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {} | `{}` |",
            cell(&record.scenario),
            record.seed,
            status_name(record.status),
            cell(&names),
            cell(&first),
            cell(&record.replay)
        );
    }
    if failing.len() > MAX_FAILING_RUNS {
        let _ = writeln!(
            out,
            "\n{} (see `results.jsonl`).",
            and_more(failing.len() - MAX_FAILING_RUNS)
        );
    }
    out.push('\n');
}
