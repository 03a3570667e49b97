//! The first screen of `report.md` (issue 19): header, verdict, reproduction key and one
//! scenario × check matrix whose failing cells link to anchors in the same report; the
//! per-scenario tables and the coverage table folded below it.

use super::tests::{
    assert_markdown_has, campaign, checks, detection, fail, first_scenarios, info, results, run,
    shrunk,
};
use super::*;
use leasesim_check::CheckVerdict;
use leasesim_results::record::RunStatus;

/// The lines before the first `<details>` or the first `## ` section: what a reviewer sees
/// before unfolding or scrolling past the summary.
fn first_screen(md: &str) -> Vec<&str> {
    md.lines()
        .take_while(|l| !l.starts_with("<details>") && !l.starts_with("## "))
        .collect()
}

/// Every `](#id)` link target in `md`.
fn link_targets(md: &str) -> Vec<&str> {
    md.split("](#")
        .skip(1)
        .map(|rest| &rest[..rest.find(')').unwrap()])
        .collect()
}

/// Panics unless every link target of `md` is the id of exactly one `<a id>` in it.
fn assert_links_resolve(md: &str) {
    let targets = link_targets(md);
    assert!(!targets.is_empty(), "no link at all:\n{md}");
    for id in targets {
        let anchor = format!("<a id=\"{id}\"></a>");
        assert_eq!(
            md.matches(&anchor).count(),
            1,
            "link #{id} lands nowhere:\n{md}"
        );
    }
}

/// The matrix row of `scenario`.
fn row<'a>(md: &'a str, scenario: &str) -> &'a str {
    let prefix = format!("| {scenario} | ");
    md.lines()
        .find(|l| l.starts_with(&prefix))
        .unwrap_or_else(|| panic!("no row for {scenario}:\n{md}"))
}

/// A clean campaign shaped like `reports/sample/`: 29 scenarios with names as long as the
/// sample's, ten seeds each, LIVE not judged in the scripted ones, and a mutants table.
fn clean_sample() -> ReportData {
    let names: Vec<String> = (0..29)
        .map(|i| format!("f{i}-scenario-with-a-long-sample-name"))
        .collect();
    let mut file = campaign("0655127b5a1c3f01e2746b7f16f773b0cb922347", None);
    file.meta.seeds = "0..10".into();
    file.meta.scenarios.clone_from(&names);
    file.scenarios = names
        .iter()
        .map(|n| {
            info(
                n,
                "what the scenario is about",
                &["takeover-after-expiry"],
                &[],
            )
        })
        .collect();
    let mut records = Vec::new();
    for (i, name) in names.iter().enumerate() {
        for seed in 1..11 {
            let mut made = checks(&[]);
            if i % 2 == 0 {
                let live = made.iter_mut().find(|c| c.name == Check::Live).unwrap();
                live.checks = 0;
                live.verdict = CheckVerdict::NotJudged;
                live.not_judged = Some("no contended session after the heal".into());
            }
            records.push(run(name, seed, RunStatus::Clean, made));
        }
    }
    let mut data = ReportData::new(file, records, Vec::new());
    data.mutants = (0..28)
        .map(|i| detection(&format!("mutant-{i}"), "a conformance rule", None))
        .collect();
    data
}

#[test]
fn a_clean_report_of_29_scenarios_answers_on_its_first_screen_in_60_lines() {
    let data = clean_sample();
    let summary = data.summary();
    assert_eq!(summary.exit_code, 0, "{}", summary.verdict);
    let (md, _, _) = render_text(&data);
    let screen = first_screen(&md);
    assert!(
        screen.len() <= 60,
        "{} lines before the first fold:\n{}",
        screen.len(),
        screen.join("\n")
    );
    let text = screen.join("\n");
    for wanted in [
        "# leasesim campaign report",
        "| seeds | 0..10 |",
        "| scenarios | 29 from `sims/field-cases` |",
        "| git commit | `0655127b5a1c3f01e2746b7f16f773b0cb922347` |",
        "| config hash | `c0ffee` |",
        "| Cargo.lock hash | `10c4` |",
        "| shard | — |",
        "| mutant | none |",
        "| runs | 290 (290 clean, 0 violation, 0 liveness, 0 inconclusive, 0 harness-error) |",
        "**Verdict: clean (exit 0)**",
        "**Reproduction key:**",
        "| scenario | runs | TOKEN | EXCL | EXPIRY | FENCE | LEDGER | STOP | LIVE | SIGNAL | DEFINITE | LIN-LEASE | LIN-LEDGER |",
        "| f0-scenario-with-a-long-sample-name | 10 | ✓ | ✓ | ✓ | ✓ | ✓ | ✓ | n/j | ✓ | ✓ | ✓ | ✓ |",
        "| f28-scenario-with-a-long-sample-name | 10 | ✓ | ✓ | ✓ | ✓ | ✓ | ✓ | n/j | ✓ | ✓ | ✓ | ✓ |",
        "| f1-scenario-with-a-long-sample-name | 10 | ✓ | ✓ | ✓ | ✓ | ✓ | ✓ | ✓ | ✓ | ✓ | ✓ | ✓ |",
        "✓ pass · n/j not judged",
        "Mutation score: **28/28** planted bugs killed",
    ] {
        assert!(
            text.contains(wanted),
            "the first screen lacks {wanted:?}:\n{text}"
        );
    }
    // One row per scenario, and the details that follow still hold every scenario's table.
    assert_eq!(screen.iter().filter(|l| l.starts_with("| f")).count(), 29);
    assert_eq!(md.matches("\n### f").count(), 29);
    assert!(md.contains("| LIVE | 10 | 0 | 0 | 0 | 0 | not judged (no contended session"));
}

#[test]
fn the_matrix_says_each_scenarios_result_per_check() {
    let data = ReportData::new(campaign("abc123", None), results(), shrunk());
    let (md, _, _) = render_text(&data);
    // This summary has sections of its own (Expectations not met): it ends at the folds.
    let screen = md.split("\n## Checks\n").next().unwrap();
    assert!(
        screen.contains(
            "| scenario | runs | TOKEN | EXCL | EXPIRY | FENCE | LEDGER | STOP | LIVE | SIGNAL | DEFINITE | LIN-LEASE | LIN-LEDGER |\n\
             |---|---:|:-:|:-:|:-:|:-:|:-:|:-:|:-:|:-:|:-:|:-:|:-:|\n"
        ),
        "{screen}"
    );
    for (scenario, cells) in [
        ("clean", "2 | ✓ | ✓ | ✓ | ✓ | ✓ | ✓ | ✓ | ✓ | ✓ | ✓ | ✓"),
        (
            "f1-pause",
            "2 | ✓ | ✓ | ✓ | **[1 ✗](#fail-f1-pause-fence)** | ✓ | ✓ | ✓ | ✓ | ✓ | ✓ | ✓",
        ),
        (
            "flaky",
            "1 ([1 harness error](#harness-error-runs)) | – | – | – | – | – | – | – | – | – | – | –",
        ),
        (
            "slow",
            "1 | ✓ | ✓ | ✓ | ✓ | ✓ | ✓ | ✓ | ✓ | ✓ | [1 ?](#failing-runs) | ✓",
        ),
        (
            "mutant-caught",
            "1 | ✓ | ✓ | ✓ | caught | ✓ | ✓ | ✓ | ✓ | ✓ | ✓ | ✓",
        ),
        (
            "mutant-missed",
            "1 | ✓ | **NOT CAUGHT** | ✓ | ✓ | ✓ | ✓ | ✓ | ✓ | ✓ | ✓ | ✓",
        ),
    ] {
        assert_eq!(row(screen, scenario), format!("| {scenario} | {cells} |"));
    }
    // What is wrong is on the first screen too: the unmet expectation, under the matrix.
    assert!(screen.contains("- **mutant-missed**: expects **EXCL** to be violated"));
    assert_links_resolve(&md);
}

#[test]
fn a_failure_links_to_its_shrunk_run_or_else_to_the_failing_runs() {
    let (md, _, _) = render_text(&ReportData::new(
        campaign("abc123", None),
        results(),
        shrunk(),
    ));
    let shrunk_section = md.split("## Violations (shrunk)\n").nth(1).unwrap();
    assert!(
        shrunk_section.starts_with(
            "\n### FENCE in f1-pause (seed 2)\n\n<a id=\"fail-f1-pause-fence\"></a>\n\n- minimal run:"
        ),
        "{shrunk_section}"
    );

    // Nothing shrunk (a merge of shards that did not shrink): the failing runs' table.
    let (md, _, _) = render_text(&ReportData::new(
        campaign("abc123", None),
        results(),
        Vec::new(),
    ));
    assert!(
        row(&md, "f1-pause").contains("| **[1 ✗](#failing-runs)** |"),
        "{md}"
    );
    assert!(md.contains("## Failing and inconclusive runs\n\n<a id=\"failing-runs\"></a>\n\n"));
    assert_links_resolve(&md);
}

#[test]
fn anchors_are_unique_when_names_collide_and_one_per_scenario_and_check() {
    let mut file = campaign("abc123", None);
    file.meta.scenarios = vec!["a/b".into(), "a-b".into()];
    file.scenarios = vec![info("a/b", "", &[], &[]), info("a-b", "", &[], &[])];
    let mut records = Vec::new();
    let mut runs = Vec::new();
    for (scenario, seed) in [("a/b", 0), ("a/b", 1), ("a-b", 0)] {
        let mut made = checks(&[]);
        fail(
            &mut made,
            "FENCE",
            "stale append landed",
            &[leasesim_check::invariants::Evidence::Op(3)],
        );
        records.push(run(scenario, seed, RunStatus::Violation, made));
        let mut shrunk_run = shrunk().remove(0);
        shrunk_run.scenario = scenario.into();
        shrunk_run.seed = seed;
        runs.push(shrunk_run);
    }
    let (md, _, _) = render_text(&ReportData::new(file, records, runs));
    // Shrunk runs are in (scenario, seed, check) order: `a-b` sorts before `a/b`.
    assert!(
        row(&md, "a-b").contains("| **[1 ✗](#fail-a-b-fence)** |"),
        "{md}"
    );
    assert!(
        row(&md, "a/b").contains("| **[2 ✗](#fail-a-b-fence-2)** |"),
        "{md}"
    );
    assert_eq!(md.matches("<a id=\"fail-").count(), 2, "{md}");
    assert_links_resolve(&md);
}

#[test]
fn the_matrix_has_a_column_per_check_made_in_check_order() {
    let mut made = checks(&[]);
    made.retain(|c| [Check::LinLedger, Check::Token].contains(&c.name));
    made.reverse();
    let data = ReportData::new(
        first_scenarios(1),
        vec![run("clean", 0, RunStatus::Clean, made)],
        Vec::new(),
    );
    assert_markdown_has(
        &data,
        "| scenario | runs | TOKEN | LIN-LEDGER |\n|---|---:|:-:|:-:|\n| clean | 1 | ✓ | ✓ |\n",
    );
}

#[test]
fn per_scenario_tables_and_coverage_are_folded_with_markdown_inside() {
    let (md, _, _) = render_text(&ReportData::new(
        campaign("abc123", None),
        results(),
        shrunk(),
    ));
    // Every <summary> line is followed by a blank line, so GitHub renders the tables inside.
    for (at, _) in md.match_indices("<details><summary>") {
        let rest = &md[at..];
        let end = rest.find('\n').unwrap();
        assert!(rest[..end].ends_with("</summary>"), "{}", &rest[..end]);
        assert!(rest[end..].starts_with("\n\n"), "{}", &rest[..end]);
    }
    let folded = |line: &str| {
        let at = md
            .find(line)
            .unwrap_or_else(|| panic!("no {line:?}:\n{md}"));
        let before = &md[..at];
        before.matches("<details>").count() == before.matches("</details>").count() + 1
    };
    for line in [
        "### f1-pause\n",
        "stop-the-world pause longer than the TTL",
        "| FENCE | 2 | 20 | 1 | 1 | 0 | **FAIL** |",
        "| event | clean | f1-pause |",
        "| graceful-handover | **0 ✗** |",
    ] {
        assert!(folded(line), "{line:?} is not inside a <details>:\n{md}");
    }
    for line in [
        "## Harness errors",
        "## Failing and inconclusive runs",
        "## Violations (shrunk)",
        "```mermaid",
    ] {
        assert!(!folded(line), "{line:?} is folded:\n{md}");
    }
}
