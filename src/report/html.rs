//! `report.html`: one self-contained page for a reviewer — the summary (verdict, seeds,
//! reproduction key, the scenario × check matrix, the mutation score) and every shrunk
//! counterexample's timeline inline, with its violations (a linearizability check's
//! explanation: the stuck operation, the states possible before it, the longest valid
//! prefix — the timeline rings the stuck operation and dashes the prefix), and for a
//! mutant's counterexample the clean twin's timeline beside it.
//!
//! Self-contained: inline CSS and SVG, no script, no font, no image fetched; a
//! Content-Security-Policy forbids the page any network fetch (`default-src 'none'`).
//! Deterministic like every report output.

use maud::{DOCTYPE, Markup, PreEscaped, html};

use super::markdown::{runs_line, seeds_line};
use super::overview::{Cell, LEGEND, columns};
use super::summary::Summary;
use super::{Counterexample, ReportData};
use crate::results::record::ShrunkRun;

/// The page's policy: nothing from the network; inline styles only.
const CSP: &str = "default-src 'none'; style-src 'unsafe-inline'; img-src data:";

const STYLE: &str = "body{font-family:sans-serif;margin:1.5em;color:#212121}\
table{border-collapse:collapse;margin:.5em 0}td,th{border:1px solid #ccc;padding:2px 8px}\
td.pass{color:#2e7d32}td.fail,td.not-caught{color:#d50000;font-weight:bold}\
td.caught{color:#1565c0}td.inconclusive{color:#6a1b9a}\
.verdict{font-size:1.2em;font-weight:bold}.pair{display:flex;flex-wrap:wrap;gap:1em}\
.pair figure{margin:0;max-width:100%;overflow-x:auto}\
pre{background:#f5f5f5;padding:.5em;overflow-x:auto}figcaption{font-weight:bold}";

/// The page for `data` and its `summary`.
pub(super) fn render(data: &ReportData, summary: &Summary) -> String {
    let meta = &summary.meta;
    let page = html! {
        (DOCTYPE)
        html lang="en" {
            head {
                meta charset="utf-8";
                meta http-equiv="Content-Security-Policy" content=(CSP);
                title { "leasesim campaign report" }
                style { (PreEscaped(STYLE)) }
            }
            body {
                h1 { "leasesim campaign report" }
                p.verdict #verdict {
                    "Verdict: " (summary.verdict) " (exit " (summary.exit_code) ")"
                }
                table #meta {
                    tr { th { "seeds" } td { (seeds_line(summary)) } }
                    tr { th { "runs" } td { (runs_line(summary)) } }
                    tr { th { "git commit" } td { code { (meta.git_commit) } } }
                    tr { th { "config hash" } td { code { (meta.config_hash) } } }
                    tr { th { "Cargo.lock hash" } td { code { (meta.cargo_lock_hash) } } }
                    tr { th { "mutant" } td { (meta.mutant.as_deref().unwrap_or("none")) } }
                }
                p #reproduction {
                    "Reproduction key: git commit + config hash + Cargo.lock hash + a seed: "
                    code {
                        "leasesim run --scenario " (meta.sims) "/<scenario>.toml --seed <seed>"
                        @if let Some(m) = &meta.mutant { " --mutant " (m) }
                    }
                }
                (matrix(summary))
                @if let Some((killed, all)) = summary.mutation_score {
                    p #mutation-score {
                        "Mutation score: " strong { (killed) "/" (all) } " planted bugs killed"
                        @if !summary.surviving_mutants.is_empty() {
                            "; survived: " strong { (summary.surviving_mutants.join(", ")) }
                        }
                    }
                }
                @if !data.shrunk.is_empty() {
                    h2 { "Counterexamples (shrunk)" }
                    @for run in &data.shrunk { (shrunk_run(data, run)) }
                }
                (mutant_counterexamples(data))
            }
        }
    };
    page.into_string()
}

/// The scenario × check matrix.
fn matrix(summary: &Summary) -> Markup {
    let checks = columns(summary);
    html! {
        @if !summary.scenarios.is_empty() {
            table #matrix {
                tr {
                    th { "scenario" } th { "runs" }
                    @for check in &checks { th { (check.name()) } }
                }
                @for scenario in &summary.scenarios {
                    tr {
                        td { (scenario.name) } td { (scenario.runs) }
                        @for check in &checks {
                            @let cell = Cell::of(
                                scenario.checks.iter().find(|c| c.name == *check),
                                scenario,
                            );
                            td class=(cell_class(cell)) { (cell.text()) }
                        }
                    }
                }
            }
            p { small { (LEGEND.replace("**", "")) } }
        }
    }
}

fn cell_class(cell: Cell) -> &'static str {
    match cell {
        Cell::Pass => "pass",
        Cell::NotJudged => "not-judged",
        Cell::Caught => "caught",
        Cell::NotCaught => "not-caught",
        Cell::Fail(_) => "fail",
        Cell::Inconclusive(_) => "inconclusive",
        Cell::NotMade => "not-made",
    }
}

/// One shrunk run: what it violates, its replay command, its violations and evidence (a
/// linearizability explanation among them), its timeline and its clean twin's.
fn shrunk_run(data: &ReportData, run: &ShrunkRun) -> Markup {
    html! {
        section.counterexample data-run-file=(run.run_file) {
            h3 { (run.check.name()) " in " (run.scenario) " (seed " (run.seed) ")" }
            p {
                "Shrunk from " (run.faults.0) " to " (run.faults.1) " faults and from "
                (run.operations.0) " to " (run.operations.1) " operations. Replay: "
                code { (run.replay) }
            }
            (timelines(data, &run.run_file))
            @for violation in &run.violations {
                p { strong { (violation.message.trim()) } }
                @if !violation.evidence.is_empty() {
                    pre.evidence { (violation.evidence.join("\n")) }
                }
            }
        }
    }
}

/// Each mutant's counterexample: its timeline beside its clean twin's.
fn mutant_counterexamples(data: &ReportData) -> Markup {
    let shown = data.mutant_counterexamples();
    html! {
        @if !shown.is_empty() {
            h2 { "Mutant counterexamples" }
            @for (detection, file) in shown {
                section.counterexample.mutant data-run-file=(file) {
                    h3 { code { (detection.mutant) } ": " (detection.killed_by) }
                    p { (detection.about) ". Minimal run: " code { (file) } }
                    (timelines(data, file))
                }
            }
        }
    }
}

/// The timeline kept beside `run_file` and, when there is one, its clean twin's, side by
/// side (inline SVG).
fn timelines(data: &ReportData, run_file: &str) -> Markup {
    let files = Counterexample::of(run_file);
    let run = data.timelines.get(&files.timeline);
    let twin = data.timelines.get(&files.clean_timeline);
    html! {
        @if run.is_some() || twin.is_some() {
            div.pair {
                @if let Some(svg) = run {
                    figure.run { figcaption { "the minimal run" } (PreEscaped(svg)) }
                }
                @if let Some(svg) = twin {
                    figure.clean-twin {
                        figcaption { "the same run on the correct implementation (clean twin)" }
                        (PreEscaped(svg))
                    }
                }
            }
        }
    }
}
