//! `junit.xml`: one `<testsuite>` per scenario, one `<testcase>` per scenario × check; a
//! `<failure>` with the evidence when the check failed unexpectedly (or an expected
//! violation was never seen), `<skipped>` when it was only inconclusive or judged nothing
//! (`<skipped message="not judged: …"/>`), and a `harness`
//! testcase with an `<error>` naming the seeds of the runs that could not be judged.

use std::fmt::Write as _;

use super::ReportData;
use super::markdown::runs;
use super::summary::{CheckSummary, Summary};
use crate::results::record::RunStatus;

/// Failing runs whose violations a `<failure>` quotes at most.
const MAX_QUOTED_RUNS: usize = 10;

pub(super) fn render(data: &ReportData, summary: &Summary) -> String {
    let mut suites = String::new();
    let (mut tests, mut failures, mut errors, mut skipped) = (0, 0, 0, 0);
    for scenario in &summary.scenarios {
        let mut cases = String::new();
        let (mut s_tests, mut s_failures, mut s_errors, mut s_skipped) = (0, 0, 0, 0);
        let class = format!("leasesim.{}", scenario.name);
        for check in &scenario.checks {
            s_tests += 1;
            let open = format!(
                "    <testcase classname=\"{}\" name=\"{}\"",
                escape(&class),
                escape(check.name.name())
            );
            let unreached = scenario.unreached_violations.contains(&check.name);
            match check.result.as_str() {
                _ if unreached || check.result == "fail" => {
                    s_failures += 1;
                    let (message, body) = failure(data, &scenario.name, check);
                    let _ = write!(
                        cases,
                        "{open}>\n      <failure message=\"{}\" type=\"{}\">{}</failure>\n    </testcase>\n",
                        escape(&message),
                        if check.result == "fail" {
                            "violation"
                        } else {
                            "expected-violation-not-seen"
                        },
                        escape(&body)
                    );
                }
                "inconclusive" | "not-run" | "not-judged" => {
                    s_skipped += 1;
                    let message = if check.result == "not-run" {
                        "no run made this check".to_owned()
                    } else if check.result == "not-judged" {
                        format!(
                            "not judged: {}",
                            check.not_judged.as_deref().unwrap_or("nothing to judge")
                        )
                    } else {
                        format!(
                            "inconclusive in {} of {} (a search ran out of budget)",
                            check.inconclusive_runs,
                            runs(check.runs)
                        )
                    };
                    let _ = write!(
                        cases,
                        "{open}>\n      <skipped message=\"{}\"/>\n    </testcase>\n",
                        escape(&message)
                    );
                }
                _ => {
                    let _ = writeln!(cases, "{open}/>");
                }
            }
        }
        let harness: Vec<_> = data
            .results
            .iter()
            .filter(|r| r.scenario == scenario.name && r.status == RunStatus::HarnessError)
            .collect();
        if !harness.is_empty() {
            s_tests += 1;
            s_errors += 1;
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
            let _ = write!(
                cases,
                "    <testcase classname=\"{}\" name=\"harness\">\n      <error message=\"{}\" type=\"harness-error\">{}</error>\n    </testcase>\n",
                escape(&class),
                escape(&format!(
                    "{} could not be judged (seeds {})",
                    runs(harness.len() as u64),
                    seeds.join(", ")
                )),
                escape(&body)
            );
        }
        let _ = write!(
            suites,
            "  <testsuite name=\"{}\" tests=\"{s_tests}\" failures=\"{s_failures}\" errors=\"{s_errors}\" skipped=\"{s_skipped}\">\n{cases}  </testsuite>\n",
            escape(&scenario.name)
        );
        tests += s_tests;
        failures += s_failures;
        errors += s_errors;
        skipped += s_skipped;
    }
    format!(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites name=\"leasesim campaign\" tests=\"{tests}\" failures=\"{failures}\" errors=\"{errors}\" skipped=\"{skipped}\">\n{suites}</testsuites>\n"
    )
}

/// The failure's message and body: the failing runs' violations with their evidence.
fn failure(data: &ReportData, scenario: &str, check: &CheckSummary) -> (String, String) {
    if check.result != "fail" {
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
            .find(|c| c.name == check.name && c.verdict == "fail")?;
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
            for evidence in &violation.evidence {
                let _ = writeln!(body, "    - {evidence}");
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
