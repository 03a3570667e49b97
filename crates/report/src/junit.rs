//! `junit.xml`: one `<testsuite>` per scenario, one `<testcase>` per scenario × check; a
//! `<failure>` with the evidence when the check failed unexpectedly (or an expected
//! violation was never seen), `<skipped>` when it was only inconclusive or judged nothing
//! (`<skipped message="not judged: …"/>`), and a `harness`
//! testcase with an `<error>` naming the seeds of the runs that could not be judged; the
//! scenario's coverage warnings and notes in the suite's `<system-out>`.

use std::fmt::Write as _;

use super::ReportData;
use super::summary::{CheckSummary, ScenarioSummary, Summary, coverage_notes, coverage_warnings};
use super::text::runs;
use leasesim_check::{CheckResult, CheckVerdict};
use leasesim_results::record::RunStatus;

/// Failing runs whose violations a `<failure>` quotes at most.
const MAX_QUOTED_RUNS: usize = 10;

pub(super) fn render(data: &ReportData, summary: &Summary) -> String {
    let mut suites = String::new();
    let mut total = Counts::default();
    for scenario in &summary.scenarios {
        let (cases, counts) = suite(data, scenario);
        let _ = write!(
            suites,
            "  <testsuite name=\"{}\" tests=\"{}\" failures=\"{}\" errors=\"{}\" skipped=\"{}\">\n{cases}  </testsuite>\n",
            escape(&scenario.name),
            counts.tests,
            counts.failures,
            counts.errors,
            counts.skipped
        );
        total.add(&counts);
    }
    format!(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites name=\"leasesim campaign\" tests=\"{}\" failures=\"{}\" errors=\"{}\" skipped=\"{}\">\n{suites}</testsuites>\n",
        total.tests, total.failures, total.errors, total.skipped
    )
}

/// Testcases by outcome, in a suite or over all suites.
#[derive(Default)]
struct Counts {
    tests: u64,
    failures: u64,
    errors: u64,
    skipped: u64,
}

impl Counts {
    fn add(&mut self, other: &Counts) {
        self.tests += other.tests;
        self.failures += other.failures;
        self.errors += other.errors;
        self.skipped += other.skipped;
    }
}

/// How one testcase ended.
enum Case {
    Passed,
    Failed,
    Skipped,
}

/// One scenario's testcases (one per check, and a `harness` one when runs could not be
/// judged) and their counts.
fn suite(data: &ReportData, scenario: &ScenarioSummary) -> (String, Counts) {
    let mut cases = String::new();
    let mut counts = Counts::default();
    let class = format!("leasesim.{}", scenario.name);
    for check in &scenario.checks {
        counts.tests += 1;
        let (case, text) = testcase(data, scenario, &class, check);
        match case {
            Case::Failed => counts.failures += 1,
            Case::Skipped => counts.skipped += 1,
            Case::Passed => {}
        }
        cases.push_str(&text);
    }
    if let Some(text) = harness_case(data, &scenario.name, &class) {
        counts.tests += 1;
        counts.errors += 1;
        cases.push_str(&text);
    }
    cases.push_str(&coverage_out(scenario));
    (cases, counts)
}

/// The scenario's coverage warnings and notes as the suite's `<system-out>` (neither fails a
/// testcase: a warning is not a violation), or nothing when it has none.
fn coverage_out(scenario: &ScenarioSummary) -> String {
    let warnings = coverage_warnings(std::slice::from_ref(scenario));
    let notes = coverage_notes(std::slice::from_ref(scenario));
    if warnings.is_empty() && notes.is_empty() {
        return String::new();
    }
    let lines: Vec<String> = warnings
        .iter()
        .map(|w| format!("warning: {w}"))
        .chain(notes.iter().map(|n| format!("note: {n}")))
        .collect();
    format!(
        "    <system-out>{}</system-out>\n",
        escape(&lines.join("\n"))
    )
}

/// The testcase of one check: a `<failure>` when it failed unexpectedly or an expected
/// violation was never seen (not caught, or no run made the check), `<skipped>` when
/// inconclusive, not run or not judged.
fn testcase(
    data: &ReportData,
    scenario: &ScenarioSummary,
    class: &str,
    check: &CheckSummary,
) -> (Case, String) {
    let open = format!(
        "    <testcase classname=\"{}\" name=\"{}\"",
        escape(class),
        escape(check.name.name())
    );
    let failed = |kind: &str| {
        let (message, body) = failure(data, &scenario.name, check);
        let text = format!(
            "{open}>\n      <failure message=\"{}\" type=\"{kind}\">{}</failure>\n    </testcase>\n",
            escape(&message),
            escape(&body)
        );
        (Case::Failed, text)
    };
    let skipped = |why: String| {
        let text = format!(
            "{open}>\n      <skipped message=\"{}\"/>\n    </testcase>\n",
            escape(&why)
        );
        (Case::Skipped, text)
    };
    let unreached = scenario.unreached_violations.contains(&check.name);
    if unreached && check.result != CheckResult::Fail {
        return failed("expected-violation-not-seen");
    }
    match check.result {
        CheckResult::Fail => failed("violation"),
        CheckResult::NotCaught => failed("expected-violation-not-seen"),
        CheckResult::NotRun => skipped("no run made this check".to_owned()),
        CheckResult::NotJudged => skipped(format!(
            "not judged: {}",
            check.not_judged.as_deref().unwrap_or("nothing to judge")
        )),
        CheckResult::Inconclusive => skipped(format!(
            "inconclusive in {} of {} (a search ran out of budget)",
            check.inconclusive_runs,
            runs(check.runs)
        )),
        CheckResult::Pass | CheckResult::Caught => (Case::Passed, format!("{open}/>\n")),
    }
}

/// The `harness` testcase of `scenario`, with an `<error>` naming the seeds of the runs
/// that could not be judged; `None` when every run was judged.
fn harness_case(data: &ReportData, scenario: &str, class: &str) -> Option<String> {
    let harness: Vec<_> = data
        .results
        .iter()
        .filter(|r| r.scenario == scenario && r.status == RunStatus::HarnessError)
        .collect();
    if harness.is_empty() {
        return None;
    }
    let body: String = harness
        .iter()
        .map(|r| {
            format!(
                "seed {}: {}\n  replay: {}\n",
                r.seed,
                r.error.as_deref().unwrap_or("(no message)"),
                r.replay
            )
        })
        .collect();
    let seeds: Vec<String> = harness.iter().map(|r| r.seed.to_string()).collect();
    Some(format!(
        "    <testcase classname=\"{}\" name=\"harness\">\n      <error message=\"{}\" type=\"harness-error\">{}</error>\n    </testcase>\n",
        escape(class),
        escape(&format!(
            "{} could not be judged (seeds {})",
            runs(harness.len() as u64),
            seeds.join(", ")
        )),
        escape(&body)
    ))
}

/// The failure's message and body: the failing runs' violations with their evidence.
fn failure(data: &ReportData, scenario: &str, check: &CheckSummary) -> (String, String) {
    if check.result != CheckResult::Fail {
        return (
            format!(
                "{} was expected to be violated but no run of {} violated it ({})",
                check.name,
                scenario,
                runs(check.runs)
            ),
            "The scenario's expectation is wrong, or its mutant survived.\n".to_owned(),
        );
    }
    let message = format!(
        "{} violated in {} of {} ({} violations)",
        check.name,
        check.failed_runs,
        runs(check.runs),
        check.violations
    );
    let mut body = String::new();
    let failing = data.results.iter().filter_map(|r| {
        let found = r
            .checks
            .iter()
            .find(|c| c.name == check.name && c.verdict == CheckVerdict::Fail)?;
        (r.scenario == scenario).then_some((r, found))
    });
    for (quoted, (record, found)) in failing.enumerate() {
        if quoted == MAX_QUOTED_RUNS {
            let _ = writeln!(body, "… more failing runs in results.jsonl");
            break;
        }
        let _ = writeln!(body, "seed {} (replay: {})", record.seed, record.replay);
        for violation in &found.violations {
            let _ = writeln!(body, "  {}", violation.message);
            for line in violation.evidence_lines() {
                let _ = writeln!(body, "    - {line}");
            }
        }
    }
    for shrunk in data
        .shrunk
        .iter()
        .filter(|s| s.scenario == scenario && s.check == check.name)
    {
        let _ = writeln!(
            body,
            "minimal run: {} (replay: {})",
            shrunk.run_file, shrunk.replay
        );
    }
    (message, body)
}

/// Text safe in XML 1.0 content and attributes: the five entities escaped; characters
/// XML 1.0 forbids (controls other than tab, newline, carriage return) replaced by U+FFFD.
pub(super) fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            '\t' | '\n' | '\r' => out.push(c),
            c if (c as u32) < 0x20 || c == '\u{FFFE}' || c == '\u{FFFF}' => out.push('\u{FFFD}'),
            c => out.push(c),
        }
    }
    out
}
