//! report.html's counterexamples: each says which check failed, its message and evidence,
//! and a linearizability failure's stuck operation, states before it and longest valid
//! prefix by op id, beside its timeline (and a mutant's clean twin's).

use super::tests::{LATE_APPEND_RUN, campaign, late_append_kill, results, shrunk};
use super::*;
use leasesim_check::linearizability::{Explanation, LinEvidence};
use leasesim_results::record::ViolationRecord;

/// The evidence `check_records` writes for a linearizability violation: the engine's
/// explanation, the stuck operation and the prefix by op id.
fn lin_evidence() -> LinEvidence {
    let explanation = Explanation {
        partition: "\"s1\"".into(),
        summary: "replica-2#0 acquire s1 got token 1, but the lease could only be held by \
                  replica-1#0 then"
            .into(),
        stuck_index: 2,
        stuck_process: 2,
        stuck_call: 4_000_000,
        stuck_return: Some(4_100_000),
        stuck: "replica-2#0 acquire s1 -> granted token 1 [4.0 s, 4.1 s]".into(),
        placed_before: 2,
        states_before: vec!["held by replica-1#0 token 1 until 10.0 s: held".into()],
        states_omitted: 0,
        longest_prefix: vec![
            "replica-1#0 acquire s1 -> granted token 1 -> held by replica-1#0".into(),
            "replica-1#0 renew s1 -> renewed -> held by replica-1#0".into(),
        ],
        longest_prefix_indices: vec![0, 1],
    };
    LinEvidence {
        explanation,
        stuck_op: Some(9),
        prefix_ops: vec![1, 5],
    }
}

/// The page of the hand-built campaign with `shrunk` runs and one mutant kill whose
/// counterexample (and clean twin) has a timeline.
fn page(shrunk: Vec<ShrunkRun>) -> String {
    let mut data = ReportData::new(campaign("abc123", None), results(), shrunk);
    data.mutants = vec![late_append_kill(
        "leasesim run --scenario sims/f1-pause.toml --seed 0 --mutant no-local-deadline",
    )];
    let files = Counterexample::of(LATE_APPEND_RUN);
    data.timelines.insert(
        files.timeline,
        "<svg class=\"timeline\" id=\"run\"/>".into(),
    );
    data.timelines.insert(
        files.clean_timeline,
        "<svg class=\"timeline\" id=\"twin\"/>".into(),
    );
    let summary = data.summary();
    html::render(&data, &summary)
}

/// The text of the first element whose opening tag starts with `open` (up to its closing
/// `close`), so an assertion names one section.
fn section<'a>(page: &'a str, open: &str, close: &str) -> &'a str {
    let start = page
        .find(open)
        .unwrap_or_else(|| panic!("no {open} in {page}"));
    let end = page[start..].find(close).map_or(page.len(), |e| start + e);
    &page[start..end]
}

#[test]
fn a_mutant_counterexample_says_which_check_failed_and_why_beside_its_twin() {
    let page = page(shrunk());
    let mutant = section(
        &page,
        "<section class=\"counterexample mutant\"",
        "</section>",
    );
    assert!(mutant.contains("(1 faults, 6 operations)"), "{mutant}");
    assert!(
        mutant.contains(
            "Replay the run it was found in, the mutant planted: <code class=\"replay\">leasesim \
             run --scenario sims/f1-pause.toml --seed 0 --mutant no-local-deadline</code>"
        ),
        "{mutant}"
    );
    assert!(
        mutant.contains("<svg class=\"timeline\" id=\"run\"/>"),
        "{mutant}"
    );
    assert!(
        mutant.contains("<svg class=\"timeline\" id=\"twin\"/>"),
        "{mutant}"
    );
    assert!(
        mutant.contains(
            "<div class=\"explanation\" data-check=\"STOP\"><p class=\"check\">Check failed: \
             <strong>STOP</strong> (a replica stops using its lease once lost or past its \
             validity deadline).</p>"
        ),
        "{mutant}"
    );
    assert!(
        mutant.contains("<strong>replica-1#0 appended after its validity deadline</strong>"),
        "{mutant}"
    );
    assert!(
        mutant.contains(
            "<pre class=\"evidence\">op 7\nvalidity s1 by replica-1 at 9.500 s (local 9.400 \
             s)</pre>"
        ),
        "{mutant}"
    );
    // The twin comes after the run, the explanation after both.
    let (run, twin, why) = (
        mutant.find("id=\"run\"").unwrap(),
        mutant.find("id=\"twin\"").unwrap(),
        mutant.find("Check failed").unwrap(),
    );
    assert!(run < twin && twin < why, "{mutant}");
}

#[test]
fn a_linearizability_failure_lays_out_its_explanation_by_op_id() {
    let mut runs = shrunk();
    runs[0].check = Check::LinLease;
    runs[0].violations = vec![ViolationRecord {
        message: "no linearization of partition \"s1\"".into(),
        evidence: Vec::new(),
        linearization: Some(Box::new(lin_evidence())),
    }];
    let page = page(runs);
    let lin = section(&page, "<div class=\"linearizability\">", "</ol>");
    assert!(
        lin.contains(
            "<p class=\"stuck\" data-op=\"9\">The operation that cannot be placed (op 9, ringed \
             in red on the timeline): <code>replica-2#0 acquire s1 -&gt; granted token 1 [4.0 s, \
             4.1 s]</code></p>"
        ),
        "{lin}"
    );
    assert!(
        lin.contains(
            "<ul class=\"states-before\"><li><code>held by replica-1#0 token 1 until 10.0 s: \
             held</code></li></ul>"
        ),
        "{lin}"
    );
    assert!(
        lin.contains("(2 operations: op 1, op 5, dashed in blue on the timeline):"),
        "{lin}"
    );
    assert_eq!(lin.matches("<li>").count(), 3, "{lin}");
    assert!(
        !page.contains("<pre class=\"evidence\">replica-2#0"),
        "{page}"
    );
    let shrunk = section(&page, "<section class=\"counterexample\"", "</section>");
    assert!(shrunk.contains("data-check=\"LIN-LEASE\""), "{shrunk}");
}

/// The verdict's backticks are code, as in report.md, and escaped first (the page had shown
/// them literally).
#[test]
fn backticks_in_the_verdict_are_code() {
    let page = page(shrunk());
    let verdict = section(&page, "<p class=\"verdict\"", "</p>");
    assert!(
        verdict.contains(
            "coverage event <code>graceful-handover</code> never reached in clean; coverage \
             event <code>stale-append-rejected</code> never reached in f1-pause (exit 3)"
        ),
        "{verdict}"
    );
    assert!(!verdict.contains('`'), "{verdict}");
    assert_eq!(
        html::code_spans("a `<b>` & `c").into_string(),
        "a <code>&lt;b&gt;</code> &amp; `c"
    );
    assert_eq!(html::code_spans("none").into_string(), "none");
}
