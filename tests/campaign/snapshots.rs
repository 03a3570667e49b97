//! Snapshots (insta) of what a reviewer reads, so that any change of behaviour shows up in
//! review: the report of a fixed small campaign, the trace and history of a fixed seed, and
//! the error texts of malformed scenario files.

use leasesim_testkit::{both, leasesim};

use crate::support::{campaign_args, copy_sims, repo_sims};

/// `report.md` with the rows that vary between machines and commits replaced.
fn redacted(report: &str) -> String {
    report
        .lines()
        .map(|line| {
            if line.starts_with("| git commit | ") {
                "| git commit | [redacted] |".to_owned()
            } else if line.starts_with("| Cargo.lock hash | ") {
                "| Cargo.lock hash | [redacted] |".to_owned()
            } else {
                line.to_owned()
            }
        })
        .map(|line| line + "\n")
        .collect()
}

#[test]
fn the_report_of_a_fixed_small_campaign() {
    let tmp = tempfile::tempdir().unwrap();
    copy_sims(
        tmp.path(),
        "sims",
        &["f1-pause-longer-than-ttl", "f6-late-release"],
    );
    let run = |out: &str, jobs: &str| {
        let output = leasesim!().run_in(tmp.path(), campaign_args("0..2", jobs, out, &[]));
        assert_eq!(output.status.code(), Some(0), "{}", both(&output));
        std::fs::read_to_string(tmp.path().join(out).join("report.md")).unwrap()
    };
    let report = run("one-job", "1");
    // The report is a function of the runs alone: a campaign on two jobs (runs finishing in
    // another order, at other wall-clock times) writes the same bytes.
    assert_eq!(run("two-jobs", "2"), report.replace("one-job", "two-jobs"));
    assert!(report.contains("| git commit | "), "{report}");
    insta::assert_snapshot!("report_md", redacted(&report));
}

#[test]
fn the_trace_and_history_of_f1_seed_1() {
    let tmp = tempfile::tempdir().unwrap();
    let scenario = repo_sims().join("f1-pause-longer-than-ttl.toml");
    let output = leasesim!().run_in(
        tmp.path(),
        [
            "run",
            "--scenario",
            scenario.to_str().unwrap(),
            "--seed",
            "1",
            "--out",
            "run",
        ],
    );
    assert_eq!(output.status.code(), Some(0), "{}", both(&output));
    for (name, file) in [
        ("f1_seed1_trace", "trace.jsonl"),
        ("f1_seed1_history", "history.jsonl"),
    ] {
        let text = std::fs::read_to_string(tmp.path().join("run").join(file)).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        let shown = lines.len().min(200);
        let snapshot = format!(
            "{} lines (first {shown} shown)\n{}\n",
            lines.len(),
            lines[..shown].join("\n")
        );
        insta::assert_snapshot!(name, snapshot);
    }
}

/// Malformed scenario files (the cases of `tests/world/scenario_errors.rs`), each alone in a
/// `--sims` folder with the field cases' files beside it.
const MALFORMED: [(&str, &str); 12] = [
    ("unknown field", "[world]\nreplicas = 2\nttl = 5000\n"),
    (
        "script and mix",
        "[workload]\nscript = \"field-cases/f1-pause-longer-than-ttl.script.json\"\nappends = [1, 3]\n",
    ),
    (
        "missing schedule file",
        "[faults]\nschedule = \"nowhere.schedule.json\"\n",
    ),
    (
        "schedule and swarm",
        "[faults]\nschedule = \"field-cases/f1-pause-longer-than-ttl.schedule.json\"\n[faults.swarm]\nkinds = [\"pause\"]\nfaults = [1, 2]\n",
    ),
    (
        "unknown invariant",
        "[expect]\nhold = [\"TOKEN\", \"TOKENS\"]\n",
    ),
    (
        "unknown fault kind",
        "[faults.swarm]\nkinds = [\"pause\", \"meteor\"]\nfaults = [1, 2]\n",
    ),
    (
        "retired fault kind",
        "[faults.swarm]\nkinds = [\"pause\", \"lease_restarts\"]\nfaults = [1, 2]\n",
    ),
    ("malformed toml", "[world\nreplicas = 2\n"),
    ("value out of range", "[world]\nreplicas = 0\n"),
    (
        "script naming an unknown replica",
        "[world]\nreplicas = 1\n[workload]\nscript = \"field-cases/f1-pause-longer-than-ttl.script.json\"\n",
    ),
    ("unknown mutant", "mutant = \"no-such-bug\"\n"),
    ("not a string", "[world]\nreplicas = \"three\"\n"),
];

#[test]
fn the_error_texts_of_malformed_scenario_files() {
    let mut snapshot = String::new();
    let mut all: Vec<(&str, String)> = MALFORMED
        .iter()
        .map(|(name, body)| (*name, format!("v = 1\nabout = \"test\"\n{body}")))
        .collect();
    all.push((
        "wrong schema version",
        "v = 2\nabout = \"test\"\n".to_owned(),
    ));
    for (name, text) in all {
        let tmp = tempfile::tempdir().unwrap();
        let sims = copy_sims(tmp.path(), "sims", &[]);
        std::fs::write(sims.join("bad.toml"), &text).unwrap();
        let output = leasesim!().run_in(
            tmp.path(),
            [
                "campaign",
                "--sims",
                "sims",
                "--seeds",
                "0..1",
                "--no-progress",
                "--out",
                "out",
            ],
        );
        assert_eq!(output.status.code(), Some(2), "{name}: {}", both(&output));
        let stderr =
            String::from_utf8_lossy(&output.stderr).replace(tmp.path().to_str().unwrap(), "TMP");
        assert!(stderr.contains("sims/bad.toml:"), "{name}: {stderr}");
        snapshot += &format!("## {name}\n{text}-> exit 2\n{stderr}\n");
    }
    insta::assert_snapshot!("malformed_scenarios", snapshot);
}
