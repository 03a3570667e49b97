//! The first screen of `report.md`: after the header and the verdict, the reproduction key
//! and one scenario × check matrix, so a reviewer sees at a glance whether the campaign can
//! be trusted before unfolding any per-scenario table (issue 19). Each failing cell links to
//! the failure's section further down; the anchors it links to are made here too, so a link
//! and its target cannot drift apart.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use super::ReportData;
use super::summary::{CheckSummary, ScenarioSummary, Summary, plural};
use super::text::cell;
use leasesim_check::{Check, CheckResult};
use leasesim_results::record::CampaignMeta;

/// The anchor of the "Failing and inconclusive runs" section: the target of a failing cell
/// without a shrunk run, and of an inconclusive one.
pub(super) const FAILING_RUNS_ANCHOR: &str = "failing-runs";
/// The anchor of the "Harness errors" section.
pub(super) const HARNESS_ERRORS_ANCHOR: &str = "harness-error-runs";

/// The legend under the matrix: what each kind of cell means.
pub(super) const LEGEND: &str = "✓ pass · n/j not judged (its runs had nothing for it to judge) · \
                      – not made (no run made it) · caught: an expected violation seen · \
                      **NOT CAUGHT**: an expected violation never seen · **N ✗**: failed in \
                      N runs (links to its shrunk run, or to the failing runs) · N ?: \
                      inconclusive in N runs (a check's budget ran out). Per-scenario \
                      details are under Checks.";

/// Explicit `<a id>` anchors of the shrunk runs, one per (scenario, check) (the first of
/// each pair, in `shrunk.jsonl` order), unique within the report. Explicit anchors rather
/// than the heading ids GitHub derives, so that every Markdown renderer resolves them.
#[derive(Default)]
pub(super) struct Anchors {
    shrunk: BTreeMap<(String, Check), String>,
}

impl Anchors {
    /// Anchors for `data`'s shrunk runs.
    pub(super) fn of(data: &ReportData) -> Anchors {
        let mut anchors = Anchors::default();
        for run in &data.shrunk {
            let key = (run.scenario.clone(), run.check);
            if anchors.shrunk.contains_key(&key) {
                continue;
            }
            let base = format!("fail-{}-{}", slug(&run.scenario), slug(run.check.name()));
            let mut id = base.clone();
            let mut n = 1;
            while anchors.shrunk.values().any(|taken| *taken == id) {
                n += 1;
                id = format!("{base}-{n}");
            }
            anchors.shrunk.insert(key, id);
        }
        anchors
    }

    /// The anchor to write before shrunk run `index` of `data.shrunk`: only the first run of
    /// its (scenario, check) has one.
    pub(super) fn shrunk_anchor(&self, data: &ReportData, index: usize) -> Option<&str> {
        let run = &data.shrunk[index];
        let first = data
            .shrunk
            .iter()
            .position(|r| r.scenario == run.scenario && r.check == run.check);
        (first == Some(index))
            .then(|| self.shrunk.get(&(run.scenario.clone(), run.check)))
            .flatten()
            .map(String::as_str)
    }

    /// Where a failing cell of `scenario` × `check` links to: its shrunk run, or the
    /// failing runs.
    fn failure(&self, scenario: &str, check: Check) -> &str {
        self.shrunk
            .get(&(scenario.to_owned(), check))
            .map_or(FAILING_RUNS_ANCHOR, String::as_str)
    }
}

/// `<a id="…"></a>`: an anchor on a line of its own.
pub(super) fn anchor_line(id: &str) -> String {
    format!("<a id=\"{id}\"></a>\n\n")
}

/// `name` as an anchor id: lower-case ASCII letters and digits, every other run of
/// characters one `-`.
fn slug(name: &str) -> String {
    let mut out = String::new();
    for c in name.chars() {
        if c.is_ascii_alphanumeric() {
            out.push(c.to_ascii_lowercase());
        } else if !out.ends_with('-') {
            out.push('-');
        }
    }
    out.trim_matches('-').to_owned()
}

/// The reproduction key in one line: what, with a seed, reruns a run byte for byte.
pub(super) fn reproduction_key(out: &mut String, meta: &CampaignMeta) {
    let _ = writeln!(
        out,
        "**Reproduction key:** git commit + config hash + Cargo.lock hash (above) + a seed. \
         On that commit, `{}` reruns a run byte for byte (each run's own command is in \
         `results.jsonl`; the failing ones are below).\n",
        meta.run_command()
    );
}

/// The checks any scenario made or expects, in [`Check`] order: the matrix's columns.
pub(super) fn columns(summary: &Summary) -> Vec<Check> {
    let mut checks: Vec<Check> = summary
        .scenarios
        .iter()
        .flat_map(|s| s.checks.iter().map(|c| c.name))
        .collect();
    checks.sort();
    checks.dedup();
    checks
}

/// The scenario × check matrix and its legend (nothing for a campaign without scenarios).
pub(super) fn matrix(out: &mut String, summary: &Summary, anchors: &Anchors) {
    if summary.scenarios.is_empty() {
        return;
    }
    let columns = columns(summary);
    out.push_str("| scenario | runs |");
    for check in &columns {
        let _ = write!(out, " {check} |");
    }
    out.push_str("\n|---|---:|");
    for _ in &columns {
        out.push_str(":-:|");
    }
    out.push('\n');
    for scenario in &summary.scenarios {
        let _ = write!(
            out,
            "| {} | {} |",
            cell(&scenario.name),
            runs_cell(scenario)
        );
        for check in &columns {
            let found = scenario.checks.iter().find(|c| c.name == *check);
            let text = found.map_or_else(|| "–".to_owned(), |c| check_cell(c, scenario, anchors));
            let _ = write!(out, " {text} |");
        }
        out.push('\n');
    }
    let _ = write!(out, "\n{LEGEND}\n\n");
}

/// A scenario's runs, and its harness errors linked to their section.
fn runs_cell(scenario: &ScenarioSummary) -> String {
    let errors = scenario
        .by_status
        .get("harness-error")
        .copied()
        .unwrap_or(0);
    if errors == 0 {
        return scenario.runs.to_string();
    }
    let errors = plural(errors as usize, "harness error", "harness errors");
    format!("{} ([{errors}](#{HARNESS_ERRORS_ANCHOR}))", scenario.runs)
}

/// What one matrix cell says of a check over a scenario's runs ([`CheckSummary::result`]):
/// the Markdown and the HTML report draw the same cells.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(super) enum Cell {
    /// ✓
    Pass,
    /// n/j: its runs had nothing for it to judge.
    NotJudged,
    /// An expected violation seen.
    Caught,
    /// An expected violation never seen.
    NotCaught,
    /// Failed in this many runs.
    Fail(u64),
    /// Inconclusive in this many runs.
    Inconclusive(u64),
    /// No run made it.
    NotMade,
}

impl Cell {
    /// The cell of `check` (`None`: not made) in `scenario`.
    pub(super) fn of(check: Option<&CheckSummary>, scenario: &ScenarioSummary) -> Cell {
        let Some(check) = check else {
            return Cell::NotMade;
        };
        // An expected violation no run made the check for is as unseen as one made and passed.
        if scenario.unreached_violations.contains(&check.name) {
            return Cell::NotCaught;
        }
        match check.result {
            CheckResult::Pass => Cell::Pass,
            CheckResult::NotJudged => Cell::NotJudged,
            CheckResult::Caught => Cell::Caught,
            CheckResult::NotCaught => Cell::NotCaught,
            CheckResult::Fail => Cell::Fail(check.failed_runs),
            CheckResult::Inconclusive => Cell::Inconclusive(check.inconclusive_runs),
            CheckResult::NotRun => Cell::NotMade,
        }
    }

    /// The cell's text, without links or emphasis.
    pub(super) fn text(self) -> String {
        match self {
            Cell::Pass => "✓".to_owned(),
            Cell::NotJudged => "n/j".to_owned(),
            Cell::Caught => "caught".to_owned(),
            Cell::NotCaught => "NOT CAUGHT".to_owned(),
            Cell::Fail(n) => format!("{n} ✗"),
            Cell::Inconclusive(n) => format!("{n} ?"),
            Cell::NotMade => "–".to_owned(),
        }
    }
}

/// One cell in Markdown: failing and inconclusive cells link to their section.
fn check_cell(check: &CheckSummary, scenario: &ScenarioSummary, anchors: &Anchors) -> String {
    let cell = Cell::of(Some(check), scenario);
    match cell {
        Cell::NotCaught => format!("**{}**", cell.text()),
        Cell::Fail(_) => format!(
            "**[{}](#{})**",
            cell.text(),
            anchors.failure(&scenario.name, check.name)
        ),
        Cell::Inconclusive(_) => format!("[{}](#{FAILING_RUNS_ANCHOR})", cell.text()),
        _ => cell.text(),
    }
}

/// The mutation score of a `--mutants` campaign; otherwise how to measure it (a clean
/// verdict says no run broke a check, not that the checks would catch a bug).
pub(super) fn mutation_score(out: &mut String, summary: &Summary) {
    let Some((killed, all)) = summary.mutation_score else {
        let _ = writeln!(
            out,
            "Mutation score: not measured in this campaign — add `--mutants all` to plant each \
             of the {} planted bugs and see which the checks kill.\n",
            leasesim_core::mutant::Mutant::ALL.len()
        );
        return;
    };
    let survived = if summary.surviving_mutants.is_empty() {
        String::new()
    } else {
        format!("; **survived: {}**", summary.surviving_mutants.join(", "))
    };
    let _ = writeln!(
        out,
        "Mutation score: **{killed}/{all}** planted bugs killed{survived} (detection table \
         under Mutants, below).\n"
    );
}
