//! A clean campaign: exit 0 and every report file, with one result per run and one JUnit
//! testcase per scenario × check.

use leasesim::history::catalogue::Check;
use leasesim_testkit::{both, leasesim};

use crate::support::{campaign_args, copy_sims, every, keys, results};

#[test]
fn a_clean_campaign_writes_every_report_file_with_one_line_per_run() {
    let tmp = tempfile::tempdir().unwrap();
    let scenarios = ["f1-pause-longer-than-ttl", "swarm-freezes"];
    copy_sims(tmp.path(), "sims", &scenarios);
    let output = leasesim!().run_in(tmp.path(), campaign_args("0..2", "2", "out", &[]));
    assert_eq!(output.status.code(), Some(0), "{}", both(&output));
    let out = tmp.path().join("out");
    let verdict = the_terminal_ends_on_the_summarys_verdict_and_its_note(&out, &output.stdout);
    for file in [
        "report.md",
        "summary.json",
        "junit.xml",
        "results.jsonl",
        "campaign.json",
    ] {
        assert!(out.join(file).is_file(), "{file} missing");
    }
    one_clean_result_per_run(&out, &scenarios);
    one_junit_testcase_per_scenario_and_check(&out, &scenarios);
    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).unwrap()).unwrap();
    assert_eq!(summary["exit_code"], 0, "{summary}");
    assert_eq!(summary["runs"], 4, "{summary}");
    the_report_counts_four_clean_runs_and_shrinks_nothing(&out, &verdict);
}

/// The last line on the terminal (`stdout`) is the verdict (with its warnings), the exit
/// code and the report, as `out`'s summary.json says; a coverage note stands just above it.
/// Returns the verdict.
fn the_terminal_ends_on_the_summarys_verdict_and_its_note(
    out: &std::path::Path,
    stdout: &[u8],
) -> String {
    let summary: serde_json::Value =
        serde_json::from_slice(&std::fs::read(out.join("summary.json")).unwrap()).unwrap();
    let verdict = summary["verdict"].as_str().unwrap();
    assert!(verdict.starts_with("clean"), "{verdict}");
    let stdout = String::from_utf8_lossy(stdout);
    assert_eq!(
        stdout.lines().last().unwrap(),
        format!("{verdict} — exit 0 — report: out/report.md")
    );
    assert_eq!(summary["seeds_run"], "0..2");
    // swarm-freezes promises `stale-append-rejected` only within 64 seeds
    // (`expect.coverage_within_seeds`), and seeds 0 and 1 do not reach it: a note just above
    // the verdict line, never a warning.
    let note = "coverage event `stale-append-rejected` not reached in 2 seeds of swarm-freezes \
                (expected within 64 seeds)";
    assert_eq!(summary["notes"], serde_json::json!([note]), "{summary}");
    assert!(!verdict.contains("swarm-freezes"), "{verdict}");
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(lines[lines.len() - 2], format!("note: {note}"), "{stdout}");
    let sum = summary["runs_wall_ms_sum"].as_u64().unwrap();
    assert!(
        sum > 0 && summary["wall_ms"].as_u64().unwrap() > 0,
        "{summary}"
    );
    verdict.to_owned()
}

/// The checks every run is judged by, in report order: the catalogue's.
fn checks() -> Vec<&'static str> {
    Check::ALL.iter().map(|c| c.name()).collect()
}

/// One line per (scenario, seed) of seeds 0..2 in `out`'s results.jsonl, each clean, with
/// every check.
fn one_clean_result_per_run(out: &std::path::Path, scenarios: &[&str]) {
    let records = results(out);
    assert_eq!(records.len(), 4);
    assert_eq!(keys(&records), every(scenarios, 0..2));
    for record in &records {
        assert_eq!(record["status"], "clean", "{record}");
        assert_eq!(record["unexpected"], serde_json::json!([]), "{record}");
        let names: Vec<&str> = record["checks"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["name"].as_str().unwrap())
            .collect();
        assert_eq!(names, checks(), "{record}");
    }
}

/// One passing testcase per scenario × check in `out`'s junit.xml, and nothing else, except
/// LIVE in the scripted field case: it has no heal marker, so LIVE judges nothing there
/// (skipped); and SIGNAL everywhere: our own lease has no signal of its own (skipped).
fn one_junit_testcase_per_scenario_and_check(out: &std::path::Path, scenarios: &[&str]) {
    let junit = std::fs::read_to_string(out.join("junit.xml")).unwrap();
    assert_eq!(junit.matches("<testcase ").count(), 22, "{junit}");
    for scenario in scenarios {
        for check in checks() {
            let open = format!("<testcase classname=\"leasesim.{scenario}\" name=\"{check}\"");
            let case = if *scenario == "f1-pause-longer-than-ttl" && check == "LIVE" {
                format!(
                    "{open}>\n      <skipped message=\"not judged: no contended session to judge after the faults healed\"/>"
                )
            } else if check == "SIGNAL" {
                format!(
                    "{open}>\n      <skipped message=\"not judged: no target_signal lines: only a target crate reports its own &quot;I lead&quot;\"/>"
                )
            } else {
                format!("{open}/>")
            };
            assert!(junit.contains(&case), "{case} missing:\n{junit}");
        }
    }
    assert!(!junit.contains("<failure"), "{junit}");
    assert!(!junit.contains("<error"), "{junit}");
    assert!(
        junit.contains("tests=\"22\" failures=\"0\" errors=\"0\" skipped=\"3\""),
        "{junit}"
    );
}

/// `out`'s report.md gives `verdict` and four clean runs; nothing failed, so nothing was
/// shrunk.
fn the_report_counts_four_clean_runs_and_shrinks_nothing(out: &std::path::Path, verdict: &str) {
    let report = std::fs::read_to_string(out.join("report.md")).unwrap();
    assert!(
        report.contains(&format!("**Verdict: {verdict} (exit 0)**")),
        "{report}"
    );
    assert!(
        report.contains(
            "| runs | 4 (4 clean, 0 violation, 0 liveness, 0 inconclusive, 0 harness-error) |"
        ),
        "{report}"
    );
    assert!(!report.contains("## Violations (shrunk)"), "{report}");
    assert!(
        std::fs::read_to_string(out.join("shrunk.jsonl"))
            .unwrap_or_default()
            .is_empty()
    );
}

/// A budget too short for any run: the last line says `incomplete` and exit 6, never clean.
#[test]
fn a_campaign_with_no_finished_run_ends_on_an_incomplete_verdict_line() {
    let tmp = tempfile::tempdir().unwrap();
    copy_sims(tmp.path(), "sims", &["f1-pause-longer-than-ttl"]);
    let output = leasesim!().run_in(
        tmp.path(),
        [
            "campaign",
            "--sims",
            "sims",
            "--budget",
            "1ns",
            "--no-progress",
            "--out",
            "out",
        ],
    );
    assert_eq!(output.status.code(), Some(6), "{}", both(&output));
    // The start banner says the seeds in words.
    assert!(
        String::from_utf8_lossy(&output.stderr).contains(", seeds 0, 1, 2… for a budget of 1ns, "),
        "{}",
        both(&output)
    );
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert_eq!(
        stdout.lines().last().unwrap(),
        "incomplete: no run finished; not a clean campaign — exit 6 — report: out/report.md"
    );
    let report = std::fs::read_to_string(tmp.path().join("out/report.md")).unwrap();
    assert!(
        report.contains("| seeds | budget 1ns; ran none |"),
        "{report}"
    );
}
