//! Run files across schema versions: every committed run file keeps replaying, old versions
//! are upgraded, unknown ones refused with a message that says why.

use std::path::{Path, PathBuf};

use leasesim::sim::runfile::{RUN_FILE_SCHEMA_VERSION, RunFile, RunWorkload, upgrade};
use leasesim_testkit::{files_ending_in, leasesim};

fn repo(path: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(path)
}

/// The `*.run.json` files of a committed folder, sorted.
fn run_files(dir: &str) -> Vec<PathBuf> {
    files_ending_in(&repo(dir), ".run.json")
}

#[test]
fn every_committed_run_file_loads() {
    let files: Vec<PathBuf> = [
        run_files("reports/sample/shrunk"),
        run_files("sims/regressions"),
    ]
    .concat();
    assert!(
        files.len() >= 16,
        "committed run files went missing: {files:?}"
    );
    for file in files {
        let run = RunFile::load(&file).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(run.v, RUN_FILE_SCHEMA_VERSION, "{}", file.display());
    }
}

/// The sample report's shrunk counterexamples (planted bugs, and the sample campaign's own
/// unexpected violations): each still replays to the violation it was shrunk for (exit 1,
/// or 5 for LIVE).
#[test]
fn the_sample_reports_counterexamples_still_replay_to_their_violations() {
    for file in run_files("reports/sample/shrunk") {
        let out = tempfile::tempdir().unwrap();
        let output = leasesim!()
            .command()
            .arg("replay")
            .arg(&file)
            .arg("--out")
            .arg(out.path())
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&output.stdout);
        assert!(
            matches!(output.status.code(), Some(1 | 5)),
            "{} no longer fails:\n{stdout}",
            file.display()
        );
        assert!(stdout.contains("verdict: "), "{stdout}");
    }
}

fn v1(workload: &str) -> serde_json::Value {
    serde_json::from_str(&format!(
        r#"{{"v": 1, "scenario": "x", "seed": 1,
            "world": {{"replicas": 2, "sessions": ["s1"], "ttl_ms": 3000,
                      "skew_margin_percent": 10, "duration_s": 10, "call_timeout_ms": 500,
                      "latency_ms": [1, 5], "backend": "grpc"}},
            "schedule": {{"v": 1, "faults": []}},
            "workload": {workload}}}"#
    ))
    .unwrap()
}

#[test]
fn a_v1_file_gets_the_liveness_phase_its_workload_implied() {
    let generated = v1(
        r#"{"generated": {"appends": [1, 6], "think_ms": [50, 1500], "shutdown_chance": [1, 25]}}"#,
    );
    let scripted = v1(r#"{"script": {"v": 1, "calls": []}}"#);
    let [generated, scripted] = [generated, scripted]
        .map(|json| serde_json::from_value::<RunFile>(upgrade(json).unwrap()).unwrap());
    assert!(matches!(generated.workload, RunWorkload::Generated(_)));
    assert!(generated.liveness_phase);
    assert!(!scripted.liveness_phase);
    assert_eq!(generated.v, RUN_FILE_SCHEMA_VERSION);
}

#[test]
fn unknown_versions_are_refused_saying_why() {
    let dir = tempfile::tempdir().unwrap();
    let cases = [
        (
            r#"{"v": 4}"#,
            "run file schema version 4 was written by a newer leasesim; this one reads versions 1 to 3",
        ),
        (
            r#"{"seed": 1}"#,
            "not a run file: it needs a schema version `\"v\"` from 1 to 3",
        ),
        (r#"{"v": 0}"#, "not a run file"),
    ];
    for (text, expected) in cases {
        let file = dir.path().join("run.json");
        std::fs::write(&file, text).unwrap();
        let error = RunFile::load(&file).unwrap_err().to_string();
        assert!(error.starts_with(&file.display().to_string()), "{error}");
        assert!(error.contains(expected), "{text}: {error}");
    }
}
