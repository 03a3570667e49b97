//! report.md's counterexamples, both kinds in one form ([`render`]): each shrunk violation of
//! a scenario ("Violations (shrunk)") and each mutant's counterexample ("Mutant
//! counterexamples"). Each shows its minimal run file (and history), how far it was shrunk,
//! the command that replays it, the check it breaks and that check's rule
//! ([`Check::rule`]), each violation's message and evidence — a linearizability explanation
//! laid out part by part, by op id as the timeline draws it ([`LinEvidence`]) — its
//! timeline (a mutant's beside its clean twin's) and, for a scenario's failure, its sequence
//! diagram.

use std::fmt::Write as _;

use super::overview::{Anchors, anchor_line};
use super::text::{cell, runs};
use super::{Counterexample, ReportData};
use leasesim_check::linearizability::LinEvidence;
use leasesim_history::catalogue::Check;
use leasesim_results::record::{Detection, ShrunkRun, ViolationRecord};

/// One counterexample as report.md shows it, whichever section it is in.
struct Shown<'a> {
    /// Its heading line (`### FENCE in f1-pause (seed 2)`).
    heading: String,
    /// The anchor the matrix links to, if any.
    anchor: Option<&'a str>,
    /// The minimal run file, relative to the report folder.
    run_file: &'a str,
    /// How far it was shrunk, in words (`shrunk from 3 to 1 faults …`).
    shrunk: Option<String>,
    /// What the replay command reruns (`replay`, or for a mutant the run it was found in).
    replay_label: &'static str,
    /// The replay command; `None`: not recorded.
    replay: Option<&'a str>,
    /// The check it violates, when known.
    check: Option<Check>,
    /// That check's violations in the minimal run.
    violations: &'a [ViolationRecord],
    /// Its mermaid sequence diagram (`None`: the section draws none).
    sequence_diagram: Option<&'a str>,
}

impl<'a> Shown<'a> {
    /// A scenario's shrunk failure, with the anchor the matrix links to.
    fn of_shrunk(run: &'a ShrunkRun, anchor: Option<&'a str>) -> Self {
        Shown {
            heading: format!("### {} in {} (seed {})", run.check, run.scenario, run.seed),
            anchor,
            run_file: &run.run_file,
            shrunk: Some(format!(
                "shrunk from {} to {} and from {} to {} operations in {}",
                run.faults.0,
                super::summary::plural(run.faults.1, "fault", "faults"),
                run.operations.0,
                run.operations.1,
                runs(u64::from(run.attempts))
            )),
            replay_label: "replay",
            replay: Some(&run.replay),
            check: Some(run.check),
            violations: &run.violations,
            sequence_diagram: Some(&run.sequence_diagram),
        }
    }

    /// A mutant's shrunk counterexample, kept in `run_file`.
    fn of_mutant(detection: &'a Detection, run_file: &'a str) -> Self {
        Shown {
            heading: format!(
                "#### `{}`: {}",
                detection.mutant,
                cell(&detection.killed_by)
            ),
            anchor: None,
            run_file,
            shrunk: detection.shrunk.map(|(faults, ops)| {
                let faults = super::summary::plural(faults, "fault", "faults");
                format!("shrunk to {faults} and {ops} operations")
            }),
            replay_label: "replay the run it was found in, the mutant planted (the minimal run \
                           file plants it too: `leasesim replay` it)",
            replay: detection.replay.as_deref(),
            check: detection.check,
            violations: &detection.violations,
            sequence_diagram: None,
        }
    }
}

/// The "Violations (shrunk)" section: each shrunk run under the anchor the matrix links to
/// (after the heading, which tools match on).
pub(super) fn violations(out: &mut String, data: &ReportData, anchors: &Anchors) {
    if data.shrunk.is_empty() {
        return;
    }
    out.push_str("## Violations (shrunk)\n\n");
    for (index, run) in data.shrunk.iter().enumerate() {
        render(
            out,
            data,
            &Shown::of_shrunk(run, anchors.shrunk_anchor(data, index)),
        );
    }
}

/// The "Mutant counterexamples" section: each mutant's shrunk counterexample that has a
/// timeline beside it ([`ReportData::mutant_counterexamples`]), with its clean twin's.
pub(super) fn mutants(out: &mut String, data: &ReportData) {
    let shown = data.mutant_counterexamples();
    if shown.is_empty() {
        return;
    }
    out.push_str("### Mutant counterexamples\n\n");
    for (detection, file) in shown {
        render(out, data, &Shown::of_mutant(detection, file));
    }
}

/// One counterexample: the one way report.md shows one.
fn render(out: &mut String, data: &ReportData, shown: &Shown<'_>) {
    let _ = write!(out, "{}\n\n", shown.heading);
    if let Some(id) = shown.anchor {
        out.push_str(&anchor_line(id));
    }
    let files = Counterexample::of(shown.run_file);
    // The history is written with the timeline (`campaign::counterexample::keep`).
    let history = if data.timelines.contains_key(&files.timeline) {
        format!(" (history: `{}`)", files.history)
    } else {
        String::new()
    };
    let _ = writeln!(out, "- minimal run: `{}`{history}", shown.run_file);
    if let Some(shrunk) = &shown.shrunk {
        let _ = writeln!(out, "- {shrunk}");
    }
    match shown.replay {
        Some(replay) => {
            let _ = write!(
                out,
                "- {}:\n\n  ```sh\n  {replay}\n  ```\n\n",
                shown.replay_label
            );
        }
        None => out.push_str("- replay: not recorded\n\n"),
    }
    if let Some(check) = shown.check {
        let _ = write!(out, "Check failed: **{check}** ({}).\n\n", check.rule());
    }
    if shown.violations.is_empty() {
        out.push_str("The minimal run's violation was not recorded.\n\n");
    }
    for violation in shown.violations {
        let _ = writeln!(out, "**{}**\n", violation.message.trim());
        if let Some(lin) = &violation.linearization {
            linearizability(out, lin);
        }
        for evidence in &violation.evidence {
            let _ = writeln!(out, "- {evidence}");
        }
        out.push('\n');
    }
    timeline_images(out, data, shown.run_file);
    match shown.sequence_diagram {
        Some(diagram) if diagram.trim().is_empty() => {
            out.push_str("(no sequence diagram recorded)\n\n");
        }
        Some(diagram) => {
            let _ = write!(out, "```mermaid\n{}\n```\n\n", diagram.trim_end());
        }
        None => {}
    }
}

/// A linearizability explanation, part by part (as report.html lays it out), as a list.
fn linearizability(out: &mut String, lin: &LinEvidence) {
    let explanation = &lin.explanation;
    let _ = writeln!(out, "{}.\n", explanation.summary);
    if let Some(partition) = explanation.named_partition() {
        let _ = writeln!(out, "- partition: {}", code(partition));
    }
    let stuck_op = lin.stuck_op.map_or(String::new(), |id| {
        format!(" (op {id}, ringed on the timeline)")
    });
    let _ = writeln!(
        out,
        "- the operation that cannot be placed{stuck_op}: {}",
        code(&explanation.stuck)
    );
    let _ = writeln!(out, "- {}:", explanation.states_heading());
    for state in explanation.states_listed() {
        let _ = writeln!(out, "  - {}", code(&state));
    }
    let named = if lin.prefix_ops.is_empty() {
        String::new()
    } else {
        format!(": {}, dashed on the timeline", lin.prefix_named())
    };
    let _ = writeln!(
        out,
        "- the longest valid prefix, in linearization order ({} operations{named}):",
        explanation.longest_prefix.len()
    );
    for (n, step) in (1..).zip(&explanation.longest_prefix) {
        let _ = writeln!(out, "  {n}. {}", code(step));
    }
}

/// `text` as an inline code span, fenced by more backticks than it holds in a row.
fn code(text: &str) -> String {
    let longest = text.split(|c| c != '`').map(str::len).max().unwrap_or(0);
    if longest == 0 {
        return format!("`{text}`");
    }
    let fence = "`".repeat(longest + 1);
    format!("{fence} {text} {fence}")
}

/// The timelines kept beside run file `run_file` ([`Counterexample`]), as images with
/// relative paths (GitHub renders them): the run's, and a mutant's clean twin's.
fn timeline_images(out: &mut String, data: &ReportData, run_file: &str) {
    let files = Counterexample::of(run_file);
    if data.timelines.contains_key(&files.timeline) {
        let _ = write!(
            out,
            "![timeline of the minimal run]({})\n\n",
            files.timeline
        );
    }
    if data.timelines.contains_key(&files.clean_timeline) {
        let _ = write!(
            out,
            "The same run on the correct implementation (`mutant: null`, its history in \
             `{}`):\n\n![timeline of the clean twin]({})\n\n",
            files.clean_history, files.clean_timeline
        );
    }
}
