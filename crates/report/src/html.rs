//! `report.html`: one self-contained page for a reviewer — the summary (verdict, seeds,
//! reproduction key, the scenario × check matrix, the mutation score) and every shrunk
//! counterexample (a scenario's failure or a mutant's kill): its timeline inline, for a
//! mutant's the clean twin's beside it, and its explanation — the check it breaks and the
//! rule, each violation's message and evidence, and for a linearizability check the stuck
//! operation, the states possible before it and the longest valid prefix, named by op id as
//! the timeline draws them (it rings the stuck operation and dashes the prefix).
//!
//! Self-contained: inline CSS and SVG, no script, no font, no image fetched; a
//! Content-Security-Policy forbids the page any network fetch (`default-src 'none'`).
//! Deterministic like every report output.

use maud::{DOCTYPE, Markup, PreEscaped, html};

use super::markdown::{runs_line, seeds_line};
use super::overview::{Cell, LEGEND, columns};
use super::summary::{LEFT_OUT_INTRO, PENDING_COVERAGE_INTRO, Summary};
use super::{Counterexample, ReportData};
use leasesim_check::linearizability::LinEvidence;
use leasesim_history::catalogue::Check;
use leasesim_results::record::{ShrunkRun, ViolationRecord};

/// The page's policy: nothing from the network; inline styles only.
const CSP: &str = "default-src 'none'; style-src 'unsafe-inline'; img-src data:";

const STYLE: &str = "body{font-family:sans-serif;margin:1.5em;color:#212121}\
table{border-collapse:collapse;margin:.5em 0}td,th{border:1px solid #ccc;padding:2px 8px}\
td.pass{color:#2e7d32}td.fail,td.not-caught{color:#d50000;font-weight:bold}\
td.caught{color:#1565c0}td.inconclusive{color:#6a1b9a}\
.verdict{font-size:1.2em;font-weight:bold}.pair{display:flex;flex-wrap:wrap;gap:1em}\
.pair figure{margin:0;max-width:100%;overflow-x:auto}\
pre{background:#f5f5f5;padding:.5em;overflow-x:auto}figcaption{font-weight:bold}\
.explanation{border-left:4px solid #d50000;padding-left:.8em}\
.stuck code{color:#d50000}.longest-prefix code{color:#1565c0}";

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
                    "Verdict: " (code_spans(&summary.verdict)) " (exit " (summary.exit_code) ")"
                }
                table #meta {
                    tr { th { "seeds" } td { (seeds_line(summary)) } }
                    tr { th { "runs" } td { (runs_line(summary)) } }
                    tr { th { "git commit" } td { code { (meta.git_commit) } } }
                    tr { th { "config hash" } td { code { (meta.config_hash) } } }
                    tr { th { "Cargo.lock hash" } td { code { (meta.cargo_lock_hash) } } }
                    tr { th { "mutant" } td { (meta.mutant.as_deref().unwrap_or("none")) } }
                    @if let Some(backend) = &meta.backend {
                        tr { th { "backend" } td { code { (backend) } " (every scenario's)" } }
                    }
                }
                p #reproduction {
                    "Reproduction key: git commit + config hash + Cargo.lock hash + a seed: "
                    code { (meta.run_command()) }
                }
                (matrix(summary))
                (coverage(summary))
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

/// The coverage warnings (expected events a campaign of the promised length missed) and notes
/// (events promised only within more seeds than this campaign ran), as report.md lists them.
fn coverage(summary: &Summary) -> Markup {
    html! {
        @if !summary.warnings.is_empty() {
            h2 { "Coverage warnings" }
            ul #coverage-warnings {
                @for warning in &summary.warnings { li { (code_spans(warning)) } }
            }
        }
        @if !summary.notes.is_empty() {
            h2 { "Coverage for a longer campaign" }
            p { (PENDING_COVERAGE_INTRO) }
            ul #coverage-notes {
                @for note in &summary.notes { li { (code_spans(note)) } }
            }
        }
        @if !summary.left_out.is_empty() {
            h2 { "Fault kinds left out" }
            p { (LEFT_OUT_INTRO) }
            ul #left-out {
                @for line in &summary.left_out { li { (code_spans(line)) } }
            }
        }
    }
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

/// One shrunk run: what it violates, its replay command, its timeline and its clean twin's,
/// and the explanation (the check, its violations and evidence).
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
            (explanation(Some(run.check), &run.violations))
        }
    }
}

/// Why a counterexample fails: the check it breaks and the rule it holds a run to, then
/// each violation's message and evidence; a linearizability check's explanation is laid out
/// as its stuck operation, the states possible before it and the longest valid prefix, each
/// named by op id as the timeline above draws them (the stuck operation ringed, the prefix
/// dashed).
fn explanation(check: Option<Check>, violations: &[ViolationRecord]) -> Markup {
    html! {
        div.explanation data-check=[check.map(Check::name)] {
            @if let Some(check) = check {
                p.check {
                    "Check failed: " strong { (check.name()) } " (" (check.rule()) ")."
                }
            }
            @for violation in violations {
                div.violation {
                    p.message { strong { (violation.message.trim()) } }
                    @if let Some(lin) = &violation.linearization {
                        (linearizability(lin))
                    }
                    @if !violation.evidence.is_empty() {
                        p { "Evidence (the history lines that prove it, ringed on the timeline):" }
                        pre.evidence { (evidence_text(violation)) }
                    }
                }
            }
        }
    }
}

/// A violation's evidence, one sentence a line.
fn evidence_text(violation: &ViolationRecord) -> String {
    let lines: Vec<String> = violation.evidence.iter().map(ToString::to_string).collect();
    lines.join("\n")
}

/// A linearizability explanation, part by part.
fn linearizability(lin: &LinEvidence) -> Markup {
    let explanation = &lin.explanation;
    let op = |id: u64| format!("op {id}");
    html! {
        div.linearizability {
            p.summary { (explanation.summary) "." }
            @if let Some(partition) = explanation.named_partition() {
                p { "Partition: " code { (partition) } }
            }
            p.stuck data-op=[lin.stuck_op] {
                "The operation that cannot be placed"
                @if let Some(id) = lin.stuck_op { " (" (op(id)) ", ringed in red on the timeline)" }
                ": " code { (explanation.stuck) }
            }
            p { (explanation.states_heading()) ":" }
            ul.states-before {
                @for state in explanation.states_listed() { li { code { (state) } } }
            }
            p {
                "The longest valid prefix, in linearization order ("
                (explanation.longest_prefix.len()) " operations"
                @if !lin.prefix_ops.is_empty() {
                    ": " (lin.prefix_named()) ", dashed in blue on the timeline"
                }
                "):"
            }
            ol.longest-prefix {
                @for step in &explanation.longest_prefix { li { code { (step) } } }
            }
        }
    }
}

/// Each mutant's counterexample: its timeline beside its clean twin's, and why it fails.
fn mutant_counterexamples(data: &ReportData) -> Markup {
    let shown = data.mutant_counterexamples();
    html! {
        @if !shown.is_empty() {
            h2 { "Mutant counterexamples" }
            @for (detection, file) in shown {
                section.counterexample.mutant data-run-file=(file) {
                    h3 { code { (detection.mutant) } ": " (code_spans(&detection.killed_by)) }
                    p {
                        (detection.about) ". Minimal run: " code { (file) }
                        @if let Some((faults, operations)) = detection.shrunk {
                            " (" (faults) " faults, " (operations) " operations)"
                        }
                        @if let Some(replay) = &detection.replay {
                            ". Replay the run it was found in, the mutant planted: "
                            code.replay { (replay) }
                        }
                    }
                    (timelines(data, file))
                    (explanation(detection.check, &detection.violations))
                }
            }
        }
    }
}

/// `text` escaped, each `` `x` `` in it shown as `<code>x</code>` (as report.md renders
/// it); a backtick without its pair stays a backtick.
pub(super) fn code_spans(text: &str) -> Markup {
    let parts: Vec<&str> = text.split('`').collect();
    let last = parts.len() - 1;
    html! {
        @for (index, part) in parts.iter().enumerate() {
            @if index % 2 == 0 {
                (part)
            } @else if index < last {
                code { (part) }
            } @else {
                "`" (part)
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
