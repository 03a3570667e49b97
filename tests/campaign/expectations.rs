//! A scenario whose expectation is wrong fails the campaign (exit 1): a planted bug with no
//! `violate` expectation is shrunk to a minimal run that replays the same violation, and an
//! expected violation never seen is reported as not met.

use leasesim::check::Check;

use leasesim_testkit::{both, leasesim, stderr};

use crate::support::{
    MUTANT, MUTANT_SCENARIO, MUTANT_SEEDS, MUTANT_VIOLATES, campaign_args, copy_sims,
    edit_scenario, mutant_sims, results,
};

#[test]
#[ignore = "slow: a campaign that shrinks two counterexamples in a child process (about 15 s); runs in .ci/run's slow step: cargo test --release -- --ignored"]
fn a_caught_bug_the_scenario_does_not_expect_exits_1_with_a_shrunk_run_that_replays_it() {
    let tmp = tempfile::tempdir().unwrap();
    let sims = mutant_sims(tmp.path());
    let output = leasesim!().run_in(tmp.path(), campaign_args(MUTANT_SEEDS, "1", "out", &[]));
    assert_eq!(output.status.code(), Some(1), "{}", both(&output));
    let out = tmp.path().join("out");
    the_run_is_an_unexpected_violation(&out);
    let report = std::fs::read_to_string(out.join("report.md")).unwrap();
    the_report_and_the_terminal_give_the_verdict(&report, &output.stdout);
    let section = the_ledger_counterexample(&report);
    let run_file = format!("shrunk/{MUTANT_SCENARIO}-seed1-ledger.run.json");
    let replay = format!("leasesim replay out/{run_file}");
    the_counterexample_shows_the_minimal_run_evidence_and_diagram(&section, &run_file, &replay);
    // Shrinking was asked for by default, and the shrunk file is what the report names.
    assert!(out.join(&run_file).is_file());
    assert!(
        !sims.join("regressions").exists(),
        "saved without --save-regressions"
    );
    the_replay_command_reproduces_the_violation(tmp.path(), &replay);
    // The minimal run carries the planted bug itself (a run file is self-contained).
    let minimal: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join(&run_file)).unwrap()).unwrap();
    assert_eq!(minimal["mutant"], MUTANT);
    assert_eq!(minimal["seed"], 1);
}

/// The campaign in `out` made one run, seed 1, a violation of the checks the mutant breaks
/// that its scenario does not expect.
fn the_run_is_an_unexpected_violation(out: &std::path::Path) {
    let records = results(out);
    assert_eq!(records.len(), 1);
    assert_eq!(records[0]["seed"], 1);
    assert_eq!(records[0]["status"], "violation");
    assert_eq!(
        records[0]["unexpected"],
        serde_json::json!(MUTANT_VIOLATES),
        "{}",
        records[0]
    );
}

/// The report's verdict, and the terminal's last line: the verdict, the exit code and the
/// report.
fn the_report_and_the_terminal_give_the_verdict(report: &str, stdout: &[u8]) {
    assert!(report.contains("| mutant | none |"), "{report}");
    let verdict = "FAIL: 1 scenario violated LEDGER, LIN-LEDGER";
    assert!(
        report.contains(&format!("**Verdict: {verdict}")),
        "{report}"
    );
    let stdout = String::from_utf8_lossy(stdout);
    let last = stdout.lines().last().unwrap();
    assert!(last.starts_with(verdict), "{last}");
    assert!(
        last.ends_with(" — exit 1 — report: out/report.md"),
        "{last}"
    );
}

/// The report's LEDGER counterexample, once it has one per violated check, each the first
/// run that broke it.
fn the_ledger_counterexample(report: &str) -> String {
    let shrunk = report
        .split("## Violations (shrunk)\n")
        .nth(1)
        .unwrap_or_else(|| panic!("no shrunk section:\n{report}"));
    let headings: Vec<&str> = shrunk
        .lines()
        .filter(|line| line.starts_with("### "))
        .collect();
    let in_run = format!(" in {MUTANT_SCENARIO} (seed 1)");
    let mut checks: Vec<&str> = headings
        .iter()
        .filter_map(|h| h.strip_suffix(in_run.as_str()))
        .map(|h| h.trim_start_matches("### "))
        .collect();
    checks.sort_unstable();
    assert_eq!(checks, MUTANT_VIOLATES, "{headings:?}");
    shrunk
        .split("\n### ")
        .find(|s| s.starts_with(&format!("LEDGER{in_run}\n")))
        .unwrap_or_else(|| panic!("no LEDGER counterexample:\n{shrunk}"))
        .to_owned()
}

/// A counterexample `section` names its minimal run `run_file` and `replay` command, the
/// check and its rule, the violation message and the history lines proving it, and a
/// sequence diagram.
fn the_counterexample_shows_the_minimal_run_evidence_and_diagram(
    section: &str,
    run_file: &str,
    replay: &str,
) {
    assert!(
        section.contains(&format!("- minimal run: `{run_file}`")),
        "{section}"
    );
    assert!(
        section.contains(&format!("  ```sh\n  {replay}\n  ```")),
        "{section}"
    );
    let rule = format!(
        "```\n\nCheck failed: **LEDGER** ({}).\n\n**",
        Check::Ledger.rule()
    );
    assert!(section.contains(&rule), "{section}");
    let evidence = section.split(&rule).nth(1).unwrap_or_default();
    assert!(
        evidence.contains("was acknowledged at seq 2 but another record is there"),
        "{section}"
    );
    assert!(evidence.contains("\n- ledger s1 seq 2"), "{section}");
    let mermaid = section
        .split("```mermaid\n")
        .nth(1)
        .unwrap_or_else(|| panic!("no mermaid block:\n{section}"));
    assert!(mermaid.starts_with("sequenceDiagram\n"), "{mermaid}");
    assert!(mermaid.contains("participant lease"), "{mermaid}");
    assert!(mermaid.contains("\n```\n"), "unterminated mermaid block");
}

/// The `replay` command, exactly as printed and run in `dir`, reproduces the violation of
/// the same check.
fn the_replay_command_reproduces_the_violation(dir: &std::path::Path, replay: &str) {
    let words: Vec<&str> = replay.split_whitespace().collect();
    assert_eq!(words[0], "leasesim");
    let mut args = words[1..].to_vec();
    args.extend(["--out", "replayed"]);
    let replayed = leasesim!().run_in(dir, &args);
    assert_eq!(replayed.status.code(), Some(1), "{}", both(&replayed));
    let stdout = String::from_utf8_lossy(&replayed.stdout);
    let ledger_line = stdout
        .lines()
        .find(|line| line.starts_with("LEDGER: "))
        .unwrap_or_else(|| panic!("{stdout}"));
    assert!(!ledger_line.ends_with(" 0 violations"), "{ledger_line}");
    let verdict = stdout.lines().last().unwrap();
    assert!(
        verdict.starts_with("verdict: FAIL: LEDGER") && verdict.ends_with("violated — exit 1"),
        "{verdict}"
    );
}

#[test]
fn an_expected_violation_never_seen_exits_1_and_the_report_says_the_expectation_was_not_met() {
    let tmp = tempfile::tempdir().unwrap();
    let sims = copy_sims(tmp.path(), "sims", &["f1-pause-longer-than-ttl"]);
    edit_scenario(&sims, "f1-pause-longer-than-ttl", |text| {
        text.replace("[expect]\n", "[expect]\nviolate = [\"EXCL\"]\n")
    });
    let output = leasesim!().run_in(tmp.path(), campaign_args("0..2", "1", "out", &[]));
    assert_eq!(output.status.code(), Some(1), "{}", both(&output));
    let out = tmp.path().join("out");
    // Every run itself is clean: it is the expectation that fails.
    for record in results(&out) {
        assert_eq!(record["status"], "clean", "{record}");
    }
    let report = std::fs::read_to_string(out.join("report.md")).unwrap();
    let verdict = "FAIL: expected violation never seen (f1-pause-longer-than-ttl: EXCL)";
    assert!(
        report.contains(&format!("**Verdict: {verdict}")),
        "{report}"
    );
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        stdout.lines().last().unwrap().starts_with(verdict),
        "{stdout}"
    );
    assert!(report.contains("## Expectations not met\n"), "{report}");
    assert!(
        report.contains(
            "- **f1-pause-longer-than-ttl**: expects **EXCL** to be violated, but no run \
             violated it."
        ),
        "{report}"
    );
    assert!(
        report.contains("| EXCL | 2 | ") && report.contains("**NOT CAUGHT**"),
        "{report}"
    );
    let junit = std::fs::read_to_string(out.join("junit.xml")).unwrap();
    assert_eq!(junit.matches("<failure ").count(), 1, "{junit}");
    assert!(
        junit.contains("type=\"expected-violation-not-seen\""),
        "{junit}"
    );
    assert!(stderr(&output).contains("2 runs in"), "{}", stderr(&output));
}
