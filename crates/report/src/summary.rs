//! `summary.json`: the campaign's totals, per scenario and check, for tooling; and the
//! verdicts the Markdown and JUnit outputs print.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

use super::{ReportData, ScenarioInfo};
use leasesim_check::{Check, CheckResult, CheckVerdict};
use leasesim_history::exit::Exit;
use leasesim_results::CoverageEvent;
use leasesim_results::record::{CampaignMeta, CheckRecord, RunRecord, RunStatus};

/// Schema version of `summary.json`.
pub const SUMMARY_VERSION: u32 = 2;

/// `summary.json`.
#[derive(Clone, PartialEq, Eq, Debug, Serialize, Deserialize)]
pub struct Summary {
    /// Schema version ([`SUMMARY_VERSION`]).
    pub v: u32,
    /// What identifies the campaign.
    pub meta: CampaignMeta,
    /// The campaign's exit code (0, 1, 3, 4, 5 or 6; see the module page): an [`Exit::code`].
    pub exit_code: u8,
    /// The verdict in one line, without the exit code: `clean`, `FAIL: …`, `incomplete: …`,
    /// `inconclusive: …` or `harness error: …`, then its warnings, if any (`, with 1
    /// warning: coverage event `x` never reached in y`).
    pub verdict: String,
    /// Every warning: each coverage event a scenario expects and none of its runs reached,
    /// over at least the seeds within which the scenario promises it. Warnings never change
    /// the exit code (docs/campaigns.md#coverage).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
    /// Every note: each expected coverage event not reached in a campaign shorter than the
    /// seeds within which its scenario promises it ([`PendingCoverage`]). Not a warning: a
    /// run of that length is not expected to reach it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
    /// Per scenario whose backend cannot take some kinds of its swarm profile: which, so
    /// none of its runs drew them (`kube-swarm-freezes on target:x: pause, suspend`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub left_out: Vec<String>,
    /// The seeds that ran: those that ran on every scenario, as ranges (`0..37`, `0..12,
    /// 40..45`), then each seed that ran on only some of them named apart, with how many
    /// (`0..12; 12 on 17 of 40 scenarios`: the last seed of a budget campaign, or a shard's
    /// share); `none` when nothing ran. A budget campaign's are only known once it ran.
    pub seeds_run: String,
    /// Runs in all.
    pub runs: u64,
    /// Runs the campaign planned (absent for a budget campaign or data built in memory).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub planned_runs: Option<u64>,
    /// Planned runs without a record (any makes the campaign incomplete, exit 6).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub missing_runs: u64,
    /// What is missing: shards not merged, then the first runs by (scenario, seed).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub missing: Vec<String>,
    /// Runs by status (`clean`, `violation`, `liveness`, `inconclusive`, `harness-error`),
    /// every status present.
    pub by_status: BTreeMap<String, u64>,
    /// Wall-clock time of the whole campaign, start to report (runs in parallel, shrinking,
    /// mutants), ms; absent when `campaign.json` does not say (a campaign still running, or
    /// data built in memory). Not deterministic.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wall_ms: Option<u64>,
    /// The sum of every run's own wall-clock time (world and checks), ms: about `jobs`
    /// times `wall_ms` spent in runs. Not deterministic.
    pub runs_wall_ms_sum: u64,
    /// Per scenario, in campaign order.
    pub scenarios: Vec<ScenarioSummary>,
    /// Every harness error, by scenario and seed.
    pub harness_errors: Vec<HarnessErrorSummary>,
    /// Every shrunk failing run.
    pub shrunk: Vec<ShrunkSummary>,
    /// A `--mutants` campaign's mutation score: `[killed, mutants]` (absent otherwise).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mutation_score: Option<(u64, u64)>,
    /// The mutants that survived (a checker too weak, or a scenario that never reaches them).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub surviving_mutants: Vec<String>,
}

/// One scenario's totals.
#[derive(Clone, PartialEq, Eq, Debug, Serialize, Deserialize)]
pub struct ScenarioSummary {
    /// The scenario.
    pub name: String,
    /// What it is about (empty when `campaign.json` does not list it).
    pub about: String,
    /// Its runs.
    pub runs: u64,
    /// Its runs by status, every status present.
    pub by_status: BTreeMap<String, u64>,
    /// Per check, in report order.
    pub checks: Vec<CheckSummary>,
    /// Coverage events reached over its runs (event → count), every known event present.
    pub coverage: BTreeMap<String, u64>,
    /// Coverage events it expects that no run reached, over at least the seeds within which
    /// it promises them (each a warning).
    pub unreached_coverage: Vec<String>,
    /// Coverage events it expects that no run reached, in fewer seeds than it promises them
    /// within (each a note).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub pending_coverage: Vec<PendingCoverage>,
    /// Checks it expects to be violated that no run violated (each makes the exit code 1).
    pub unreached_violations: Vec<Check>,
}

/// An expected coverage event not reached by a campaign too short to promise it.
#[derive(Clone, PartialEq, Eq, Debug, Serialize, Deserialize)]
pub struct PendingCoverage {
    /// The event's name.
    pub event: String,
    /// The seeds the scenario ran (runs judged, harness errors aside).
    pub seeds: u64,
    /// The seeds within which the scenario promises it (`expect.coverage_within_seeds`).
    pub within_seeds: u64,
}

impl PendingCoverage {
    /// The note: ``coverage event `stale-append-rejected` not reached in 8 seeds of
    /// swarm-freezes (expected within 64 seeds)``.
    pub fn note(&self, scenario: &str) -> String {
        format!(
            "coverage event `{}` not reached in {} of {scenario} (expected within {} seeds)",
            self.event,
            plural(self.seeds as usize, "seed", "seeds"),
            self.within_seeds
        )
    }
}

/// One check over one scenario's runs.
#[derive(Clone, PartialEq, Eq, Debug, Serialize, Deserialize)]
pub struct CheckSummary {
    /// The check (`TOKEN` … `LIN-LEDGER` in JSON).
    pub name: Check,
    /// Runs that made this check.
    pub runs: u64,
    /// Individual checks made, over all runs.
    pub checks: u64,
    /// Violations found, over all runs.
    pub violations: u64,
    /// Runs where it failed.
    pub failed_runs: u64,
    /// Runs where it was inconclusive (budget ran out).
    pub inconclusive_runs: u64,
    /// Runs where it judged nothing (the history had nothing for it; absent when 0).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub not_judged_runs: u64,
    /// Why it judged nothing, as the first such run says (absent when it always judged).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub not_judged: Option<String>,
    /// Whether the scenario expects it to be violated.
    pub expected_violation: bool,
    /// `pass`, `fail`, `inconclusive`, `caught` (an expected violation seen),
    /// `not-caught` (an expected violation never seen), `not-judged` (no run had anything
    /// for it to judge) or `not-run`.
    pub result: CheckResult,
}

/// A run that could not be judged.
#[derive(Clone, PartialEq, Eq, Debug, Serialize, Deserialize)]
pub struct HarnessErrorSummary {
    /// The scenario.
    pub scenario: String,
    /// The seed.
    pub seed: u64,
    /// The error.
    pub error: String,
    /// The command that reproduces the run.
    pub replay: String,
}

/// A shrunk failing run.
#[derive(Clone, PartialEq, Eq, Debug, Serialize, Deserialize)]
pub struct ShrunkSummary {
    /// The scenario.
    pub scenario: String,
    /// The original seed.
    pub seed: u64,
    /// The check it violates.
    pub check: Check,
    /// The minimal run file, relative to the report folder.
    pub run_file: String,
    /// The command that replays it.
    pub replay: String,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// Every status, by its JSON name, at 0.
fn statuses() -> BTreeMap<String, u64> {
    RunStatus::ALL
        .into_iter()
        .map(|s| (status_name(s).to_owned(), 0))
        .collect()
}

/// A status's JSON name.
pub(super) fn status_name(status: RunStatus) -> &'static str {
    match status {
        RunStatus::Clean => "clean",
        RunStatus::Violation => "violation",
        RunStatus::Liveness => "liveness",
        RunStatus::Inconclusive => "inconclusive",
        RunStatus::HarnessError => "harness-error",
    }
}

/// Event names in report order: [`CoverageEvent::ALL`], then any others alphabetically.
pub(super) fn order_events(names: &mut [String]) {
    names.sort_by_key(|name| {
        (
            CoverageEvent::position(name).unwrap_or(CoverageEvent::ALL.len()),
            name.clone(),
        )
    });
}

impl Summary {
    /// The campaign's exit ([`Summary::exit_code`] as an [`Exit`]; a code no campaign
    /// writes reads as a harness error).
    pub fn exit(&self) -> Exit {
        Exit::from_code(self.exit_code).unwrap_or(Exit::HarnessError)
    }

    /// What a campaign prints last: each note (`note: coverage event … not reached in 8
    /// seeds of …`), then [`Summary::final_line`], one per line, without a final newline.
    pub fn closing_lines(&self, dir: &std::path::Path) -> String {
        let mut lines: Vec<String> = self.notes.iter().map(|n| format!("note: {n}")).collect();
        lines.push(self.final_line(dir));
        lines.join("\n")
    }

    /// The line a campaign, `report render` and `report merge` print last: the verdict, the
    /// exit code and where the report is (`FAIL: 1 scenario violated EXCL — exit 1 — report:
    /// reports/latest/report.md`), `dir` being the report folder.
    pub fn final_line(&self, dir: &std::path::Path) -> String {
        format!(
            "{} — exit {} — report: {}",
            self.verdict,
            self.exit_code,
            dir.join("report.md").display()
        )
    }

    pub(super) fn of(data: &ReportData) -> Summary {
        let by_status = count_statuses(&data.results);
        let scenarios: Vec<ScenarioSummary> = scenario_names(data)
            .into_iter()
            .map(|name| scenario(data, &name))
            .collect();
        let surviving: Vec<String> = data
            .mutants
            .iter()
            .filter(|d| !d.killed)
            .map(|d| d.mutant.clone())
            .collect();
        let mutation_score = (!data.mutants.is_empty()).then(|| {
            let killed = data.mutants.iter().filter(|d| d.killed).count() as u64;
            (killed, data.mutants.len() as u64)
        });
        let completeness = data.completeness.clone().unwrap_or_default();
        let incomplete = completeness.missing_runs > 0
            || data.results.is_empty()
            || !never_ran(data, &scenarios).is_empty();
        let (exit, verdict) = verdict(data, &scenarios, &surviving, incomplete);
        Summary {
            v: SUMMARY_VERSION,
            meta: data.campaign.meta.clone(),
            exit_code: exit.code(),
            verdict,
            warnings: coverage_warnings(&scenarios),
            notes: coverage_notes(&scenarios),
            left_out: left_out(data),
            seeds_run: seeds_run(&data.results, scenarios.len()),
            runs: data.results.len() as u64,
            planned_runs: completeness.planned,
            missing_runs: completeness.missing_runs,
            missing: completeness.missing,
            by_status,
            wall_ms: data.campaign.wall_ms,
            runs_wall_ms_sum: data.results.iter().map(|r| r.wall_ms).sum(),
            scenarios,
            harness_errors: harness_errors(data),
            shrunk: shrunk_summaries(data),
            mutation_score,
            surviving_mutants: surviving,
        }
    }
}

/// Runs by status name, every status present.
fn count_statuses<'a>(records: impl IntoIterator<Item = &'a RunRecord>) -> BTreeMap<String, u64> {
    let mut by_status = statuses();
    for record in records {
        *by_status
            .entry(status_name(record.status).into())
            .or_default() += 1;
    }
    by_status
}

/// Coverage warnings, and scenarios a budget never ran, listed at most in the verdict line
/// (the report lists them all).
const MAX_LISTED: usize = 3;

/// One reason for a campaign's exit: the exit it stands for and its words.
struct Finding {
    exit: Exit,
    text: String,
}

/// The campaign's exit and verdict line (see the module page of `report`): `clean`, or
/// `FAIL: 2 scenarios violated EXCL, TOKEN; 1 mutant survived (fence-written-blind)`, or
/// `incomplete: …`, `inconclusive: …`, `harness error: …` — every finding, worst first in
/// [`Exit::PRECEDENCE`] order — then the coverage warnings (`, with 1 warning: coverage
/// event `x` never reached in y`), which never change the exit code.
fn verdict(
    data: &ReportData,
    scenarios: &[ScenarioSummary],
    surviving: &[String],
    incomplete: bool,
) -> (Exit, String) {
    let mut findings = run_findings(data);
    if !surviving.is_empty() {
        findings.push(Finding {
            exit: Exit::SafetyViolation,
            text: format!(
                "{} survived ({})",
                plural(surviving.len(), "mutant", "mutants"),
                surviving.join(", ")
            ),
        });
    }
    let unseen: Vec<String> = scenarios
        .iter()
        .filter(|s| !s.unreached_violations.is_empty())
        .map(|s| format!("{}: {}", s.name, Check::list(&s.unreached_violations)))
        .collect();
    if !unseen.is_empty() {
        findings.push(Finding {
            exit: Exit::SafetyViolation,
            text: format!("expected violation never seen ({})", unseen.join("; ")),
        });
    }
    if incomplete {
        let completeness = data.completeness.clone().unwrap_or_default();
        let unrun = never_ran(data, scenarios);
        let text = match completeness.planned {
            _ if data.results.is_empty() => "no run finished; not a clean campaign".to_owned(),
            None if !unrun.is_empty() => format!(
                "{} of {} never ran within the budget ({}); give a longer --budget; not a clean \
                 campaign",
                plural(unrun.len(), "scenario", "scenarios"),
                scenarios.len(),
                first_of(&unrun, MAX_LISTED, ", ")
            ),
            Some(planned) => format!(
                "{} of {planned} planned runs missing (see Missing runs); not a clean campaign",
                completeness.missing_runs
            ),
            None => "fewer runs than planned (see Missing runs); not a clean campaign".into(),
        };
        findings.push(Finding {
            exit: Exit::Incomplete,
            text,
        });
    }
    findings.sort_by_key(|f| Exit::PRECEDENCE.iter().position(|e| *e == f.exit));
    let exit = Exit::worst(findings.iter().map(|f| f.exit));
    let mut line = verdict_label(exit).to_owned();
    if !findings.is_empty() {
        let texts: Vec<&str> = findings.iter().map(|f| f.text.as_str()).collect();
        line += &format!(": {}", texts.join("; "));
    }
    line += &warnings_clause(&coverage_warnings(scenarios));
    (exit, line)
}

/// The scenarios of an unsharded budget campaign (seeds not planned: `--budget`) that the
/// budget ran out before: a campaign that judged only some of its scenarios is incomplete,
/// never clean. A planned campaign counts its missing runs instead; a shard runs only its
/// share; data not read from a folder has no plan to tell which it is.
fn never_ran<'a>(data: &ReportData, scenarios: &'a [ScenarioSummary]) -> Vec<&'a str> {
    let budget = data
        .completeness
        .as_ref()
        .is_some_and(|c| c.planned.is_none());
    if !budget || data.campaign.meta.shard.is_some() || data.results.is_empty() {
        return Vec::new();
    }
    scenarios
        .iter()
        .filter(|s| s.runs == 0)
        .map(|s| s.name.as_str())
        .collect()
}

/// The verdict's first word for `exit`: `clean`, `FAIL`, `incomplete`, `inconclusive` or
/// `harness error`.
fn verdict_label(exit: Exit) -> &'static str {
    match exit {
        Exit::Clean => "clean",
        Exit::HarnessError | Exit::BadInput => "harness error",
        Exit::Incomplete => "incomplete",
        Exit::Inconclusive => "inconclusive",
        Exit::SafetyViolation | Exit::LivenessViolation => "FAIL",
    }
}

/// What the runs themselves found: harness errors, unexpected safety and liveness
/// violations (how many scenarios, which checks), inconclusive runs.
fn run_findings(data: &ReportData) -> Vec<Finding> {
    let mut findings = Vec::new();
    let errors: Vec<&RunRecord> = data
        .results
        .iter()
        .filter(|r| r.status == RunStatus::HarnessError)
        .collect();
    if let Some(first) = errors.first() {
        findings.push(Finding {
            exit: Exit::HarnessError,
            text: format!(
                "{} could not be judged (first: {} seed {})",
                plural(errors.len(), "run", "runs"),
                first.scenario,
                first.seed
            ),
        });
    }
    for (status, exit, what) in [
        (RunStatus::Violation, Exit::SafetyViolation, "violated"),
        (
            RunStatus::Liveness,
            Exit::LivenessViolation,
            "violated (liveness)",
        ),
    ] {
        if let Some(text) = violation_finding(data, status, what) {
            findings.push(Finding { exit, text });
        }
    }
    let inconclusive = data
        .results
        .iter()
        .filter(|r| r.status == RunStatus::Inconclusive)
        .count();
    if inconclusive > 0 {
        findings.push(Finding {
            exit: Exit::Inconclusive,
            text: format!(
                "{} ran out of a check's budget; no violation found",
                plural(inconclusive, "run", "runs")
            ),
        });
    }
    findings
}

/// `2 scenarios violated EXCL, TOKEN` over the runs of `status` (checks in report order);
/// `None` when no run has it.
fn violation_finding(data: &ReportData, status: RunStatus, what: &str) -> Option<String> {
    let failing: Vec<&RunRecord> = data.results.iter().filter(|r| r.status == status).collect();
    if failing.is_empty() {
        return None;
    }
    let scenarios: BTreeSet<&str> = failing.iter().map(|r| r.scenario.as_str()).collect();
    let checks: BTreeSet<Check> = failing
        .iter()
        .flat_map(|r| r.unexpected.iter().copied())
        .filter(|c| status == RunStatus::Liveness || !c.is_liveness())
        .collect();
    let checks: Vec<Check> = checks.into_iter().collect();
    Some(format!(
        "{} {what} {}",
        plural(scenarios.len(), "scenario", "scenarios"),
        Check::list(&checks)
    ))
}

/// Partial seeds (run on only some scenarios) named at most in `seeds_run`, as ranges of
/// seeds run on equally many scenarios.
const MAX_PARTIAL_SEEDS_LISTED: usize = 5;

/// [`Summary::seeds_run`] of `results` (one per scenario and seed) over a campaign of
/// `scenarios` scenarios: the seeds every scenario ran as ranges, then `; S on N of M
/// scenarios` for each seed S (one seed, not a range) only N of them ran (consecutive seeds run on equally many
/// scenarios share a range: `12..14 on 17 of 40 scenarios`).
pub(super) fn seeds_run(results: &[RunRecord], scenarios: usize) -> String {
    // Seed → how many scenarios ran it (one record per (scenario, seed)).
    let mut ran_on: BTreeMap<u64, usize> = BTreeMap::new();
    for record in results {
        *ran_on.entry(record.seed).or_default() += 1;
    }
    let every = ran_on
        .iter()
        .filter(|(_, n)| **n >= scenarios)
        .map(|(seed, _)| *seed);
    let mut parts = Vec::new();
    let complete = seed_ranges(every);
    if complete != "none" || ran_on.is_empty() {
        parts.push(complete);
    }
    // Consecutive partial seeds with one count: (first, last, count).
    let mut partial: Vec<(u64, u64, usize)> = Vec::new();
    for (&seed, &n) in ran_on.iter().filter(|(_, n)| **n < scenarios) {
        match partial.last_mut() {
            Some((_, last, count)) if *count == n && last.checked_add(1) == Some(seed) => {
                *last = seed;
            }
            _ => partial.push((seed, seed, n)),
        }
    }
    let partial: Vec<String> = partial
        .iter()
        .map(|&(first, last, n)| {
            let seeds = if first == last {
                first.to_string()
            } else {
                seed_ranges(first..=last)
            };
            format!("{seeds} on {n} of {scenarios} scenarios")
        })
        .collect();
    if !partial.is_empty() {
        parts.push(first_of(&partial, MAX_PARTIAL_SEEDS_LISTED, "; "));
    }
    parts.join("; ")
}

/// `seeds` as sorted, merged ranges (end excluded): `0..12, 40..45`; `none` when empty. A
/// range that holds `u64::MAX` (a live run's seed may be any u64) ends `..=18446744073709551615`:
/// its excluded end would not be a u64.
pub(super) fn seed_ranges(seeds: impl IntoIterator<Item = u64>) -> String {
    let seeds: BTreeSet<u64> = seeds.into_iter().collect();
    // (first, last), both included.
    let mut ranges: Vec<(u64, u64)> = Vec::new();
    for seed in seeds {
        match ranges.last_mut() {
            Some((_, last)) if last.checked_add(1) == Some(seed) => *last = seed,
            _ => ranges.push((seed, seed)),
        }
    }
    if ranges.is_empty() {
        return "none".to_owned();
    }
    let text: Vec<String> = ranges
        .iter()
        .map(|&(a, b)| match b.checked_add(1) {
            Some(end) => format!("{a}..{end}"),
            None => format!("{a}..={b}"),
        })
        .collect();
    text.join(", ")
}

/// `… and N more`: how a list that shows only some of its items ends (the report's one
/// spelling of it).
pub(super) fn and_more(n: impl std::fmt::Display) -> String {
    format!("… and {n} more")
}

/// The first `max` of `items` joined by `separator`, then [`and_more`] the rest when some
/// were left out (`a, b, c, … and 2 more`).
pub(super) fn first_of<S: AsRef<str>>(items: &[S], max: usize, separator: &str) -> String {
    let mut shown: Vec<&str> = items.iter().take(max).map(AsRef::as_ref).collect();
    let more = and_more(items.len().saturating_sub(max));
    if items.len() > max {
        shown.push(&more);
    }
    shown.join(separator)
}

/// `1 run`, `2 runs`.
pub(super) fn plural(n: usize, one: &str, many: &str) -> String {
    if n == 1 {
        format!("1 {one}")
    } else {
        format!("{n} {many}")
    }
}

/// One warning per expected coverage event a scenario never reached: ``coverage event
/// `stale-append-rejected` never reached in swarm-freezes``.
pub(super) fn coverage_warnings(scenarios: &[ScenarioSummary]) -> Vec<String> {
    scenarios
        .iter()
        .flat_map(|s| {
            s.unreached_coverage
                .iter()
                .map(move |event| format!("coverage event `{event}` never reached in {}", s.name))
        })
        .collect()
}

/// What the notes are, in every format that lists them (report.md, report.html).
pub(super) const PENDING_COVERAGE_INTRO: &str = "Not warnings: each scenario promises these \
     events only within more seeds than this campaign ran; a campaign of that many seeds that \
     misses one warns.";

/// One note per expected coverage event a scenario did not reach in fewer seeds than it
/// promises it within ([`PendingCoverage::note`]).
pub(super) fn coverage_notes(scenarios: &[ScenarioSummary]) -> Vec<String> {
    scenarios
        .iter()
        .flat_map(|s| s.pending_coverage.iter().map(|p| p.note(&s.name)))
        .collect()
}

/// What a reader is told when a backend leaves kinds out (report.md, report.html).
pub(super) const LEFT_OUT_INTRO: &str = "These scenarios' backends cannot take some fault kinds \
     their swarm profiles name (docs/targets.md#what-a-target-world-refuses): no run drew them, \
     so this campaign says nothing about them.";

/// One line per scenario whose swarm profile names kinds its backend cannot take.
fn left_out(data: &ReportData) -> Vec<String> {
    data.campaign
        .scenarios
        .iter()
        .filter_map(|scenario| {
            let left_out = scenario.left_out.as_ref()?;
            Some(format!(
                "`{}` on `{}`: {}",
                scenario.name,
                left_out.backend,
                left_out.kinds.join(", ")
            ))
        })
        .collect()
}

/// `, with 1 warning: …` (the first [`MAX_LISTED`], then `… and N more (see
/// Expectations)`); empty without warnings.
fn warnings_clause(warnings: &[String]) -> String {
    if warnings.is_empty() {
        return String::new();
    }
    let mut listed = first_of(warnings, MAX_LISTED, "; ");
    if warnings.len() > MAX_LISTED {
        listed += " (see Expectations)";
    }
    format!(
        ", with {}: {listed}",
        plural(warnings.len(), "warning", "warnings")
    )
}

/// Every harness error, by scenario and seed.
fn harness_errors(data: &ReportData) -> Vec<HarnessErrorSummary> {
    data.results
        .iter()
        .filter(|r| r.status == RunStatus::HarnessError)
        .map(|r| HarnessErrorSummary {
            scenario: r.scenario.clone(),
            seed: r.seed,
            error: r.error.clone().unwrap_or_else(|| "(no message)".into()),
            replay: r.replay.clone(),
        })
        .collect()
}

/// Every shrunk failing run.
fn shrunk_summaries(data: &ReportData) -> Vec<ShrunkSummary> {
    data.shrunk
        .iter()
        .map(|s| ShrunkSummary {
            scenario: s.scenario.clone(),
            seed: s.seed,
            check: s.check,
            run_file: s.run_file.clone(),
            replay: s.replay.clone(),
        })
        .collect()
}

/// Scenarios in campaign order (meta's list, then `campaign.json`'s infos), then any other
/// scenario the results name, alphabetically.
fn scenario_names(data: &ReportData) -> Vec<String> {
    let mut names: Vec<String> = Vec::new();
    let listed = data
        .campaign
        .meta
        .scenarios
        .iter()
        .chain(data.campaign.scenarios.iter().map(|s| &s.name));
    for name in listed {
        if !names.contains(name) {
            names.push(name.clone());
        }
    }
    let mut others: Vec<String> = data
        .results
        .iter()
        .map(|r| r.scenario.clone())
        .filter(|n| !names.contains(n))
        .collect();
    others.sort();
    others.dedup();
    names.extend(others);
    names
}

fn scenario(data: &ReportData, name: &str) -> ScenarioSummary {
    let info = data.campaign.scenarios.iter().find(|s| s.name == name);
    let runs: Vec<&RunRecord> = data.results.iter().filter(|r| r.scenario == name).collect();
    let expected_violations = info.map_or(&[][..], |i| &i.violate[..]);
    let expected_coverage = info.map_or(&[][..], |i| &i.coverage[..]);
    let checks = check_summaries(expected_violations, &runs);
    let coverage = coverage_counts(expected_coverage, &runs);
    let judged = runs.iter().any(|r| r.status != RunStatus::HarnessError);
    let (unreached_coverage, pending_coverage) = unreached(info, &coverage, &runs);
    let unreached_violations = checks
        .iter()
        .filter(|c| {
            c.result == CheckResult::NotCaught || (c.expected_violation && judged && c.runs == 0)
        })
        .map(|c| c.name)
        .collect();
    ScenarioSummary {
        name: name.to_owned(),
        about: info.map(|i| i.about.clone()).unwrap_or_default(),
        runs: runs.len() as u64,
        by_status: count_statuses(runs.iter().copied()),
        checks,
        coverage,
        unreached_coverage,
        pending_coverage,
        unreached_violations,
    }
}

/// The expected coverage events no run reached, in report order: those due (the scenario
/// ran at least the seeds it promises them within: a warning each), and those pending (fewer
/// seeds: a note each). Nothing when no run was judged.
fn unreached(
    info: Option<&ScenarioInfo>,
    coverage: &BTreeMap<String, u64>,
    runs: &[&RunRecord],
) -> (Vec<String>, Vec<PendingCoverage>) {
    let seeds: BTreeSet<u64> = runs
        .iter()
        .filter(|r| r.status != RunStatus::HarnessError)
        .map(|r| r.seed)
        .collect();
    let seeds = seeds.len() as u64;
    let Some(info) = info.filter(|_| seeds > 0) else {
        return (Vec::new(), Vec::new());
    };
    let mut missed: Vec<String> = info
        .coverage
        .iter()
        .filter(|e| coverage.get(*e).copied().unwrap_or(0) == 0)
        .cloned()
        .collect();
    order_events(&mut missed);
    missed.dedup();
    let (due, pending): (Vec<String>, Vec<String>) = missed
        .into_iter()
        .partition(|event| seeds >= info.within_seeds(event));
    let pending = pending
        .into_iter()
        .map(|event| PendingCoverage {
            within_seeds: info.within_seeds(&event),
            event,
            seeds,
        })
        .collect();
    (due, pending)
}

/// One check's totals before any run: nothing counted.
fn blank(name: Check) -> CheckSummary {
    CheckSummary {
        name,
        runs: 0,
        checks: 0,
        violations: 0,
        failed_runs: 0,
        inconclusive_runs: 0,
        not_judged_runs: 0,
        not_judged: None,
        expected_violation: false,
        result: CheckResult::NotRun,
    }
}

/// Per check, in report order: its totals over `runs` and its result; every check in
/// `expected` (to be violated) is listed even when no run made it.
fn check_summaries(expected: &[Check], runs: &[&RunRecord]) -> Vec<CheckSummary> {
    // Keyed by check: iterates in report order.
    let mut checks: BTreeMap<Check, CheckSummary> = BTreeMap::new();
    for expected in expected {
        let mut check = blank(*expected);
        check.expected_violation = true;
        checks.insert(*expected, check);
    }
    for check in runs.iter().flat_map(|record| &record.checks) {
        let entry = checks
            .entry(check.name)
            .or_insert_with(|| blank(check.name));
        add_run(entry, check);
    }
    checks
        .into_values()
        .map(|mut check| {
            check.result = result(&check);
            check
        })
        .collect()
}

/// Adds one run's record of the check to its totals.
fn add_run(entry: &mut CheckSummary, check: &CheckRecord) {
    entry.runs += 1;
    entry.checks += check.checks;
    entry.violations += check.violations.len() as u64;
    entry.expected_violation |= check.expected_violation;
    match check.verdict {
        CheckVerdict::Fail => entry.failed_runs += 1,
        CheckVerdict::Unknown => entry.inconclusive_runs += 1,
        CheckVerdict::NotJudged => {
            entry.not_judged_runs += 1;
            if entry.not_judged.is_none() {
                entry.not_judged.clone_from(&check.not_judged);
            }
        }
        CheckVerdict::Pass => {}
    }
}

/// A check's result over its runs ([`CheckSummary::result`]).
fn result(check: &CheckSummary) -> CheckResult {
    match (check.expected_violation, check.runs, check.failed_runs) {
        (_, 0, _) => CheckResult::NotRun,
        (true, _, 0) => CheckResult::NotCaught,
        (true, _, _) => CheckResult::Caught,
        (false, _, f) if f > 0 => CheckResult::Fail,
        _ if check.inconclusive_runs > 0 => CheckResult::Inconclusive,
        _ if check.not_judged_runs == check.runs => CheckResult::NotJudged,
        _ => CheckResult::Pass,
    }
}

/// Coverage events reached over `runs` (event → count): every known event and every
/// `expected` one present.
fn coverage_counts(expected: &[String], runs: &[&RunRecord]) -> BTreeMap<String, u64> {
    let mut coverage: BTreeMap<String, u64> = CoverageEvent::ALL
        .map(|e| (e.name().to_owned(), 0))
        .into_iter()
        .collect();
    for (event, count) in runs.iter().flat_map(|record| &record.coverage) {
        *coverage.entry(event.clone()).or_default() += count;
    }
    for event in expected {
        coverage.entry(event.clone()).or_default();
    }
    coverage
}
