//! `--resume`: finished runs are never run again; a folder of another campaign, or a
//! results file damaged beyond a torn last line, is refused with exit 2.

use std::path::Path;
use std::process::Output;

use crate::support::{both, copy_sims, every, keys, leasesim, results, stderr, without_wall_time};

const SCENARIOS: [&str; 2] = ["f1-pause-longer-than-ttl", "f6-late-release"];

/// `leasesim campaign` over [`SCENARIOS`] in `root/sims` into `root/out`, plus `extra`.
fn campaign(root: &Path, seeds: &str, extra: &[&str]) -> Output {
    let mut args = vec![
        "campaign",
        "--sims",
        "sims",
        "--seeds",
        seeds,
        "--jobs",
        "2",
        "--no-progress",
        "--out",
        "out",
    ];
    args.extend(extra);
    leasesim(root, &args)
}

#[test]
fn resuming_a_finished_campaign_runs_nothing_again() {
    let tmp = tempfile::tempdir().unwrap();
    copy_sims(tmp.path(), "sims", &SCENARIOS);
    let first = campaign(tmp.path(), "0..2", &[]);
    assert_eq!(first.status.code(), Some(0), "{}", both(&first));
    let results_path = tmp.path().join("out/results.jsonl");
    let before = std::fs::read(&results_path).unwrap();
    assert_eq!(
        keys(&results(&tmp.path().join("out"))),
        every(&SCENARIOS, 0..2)
    );

    let again = campaign(tmp.path(), "0..2", &["--resume"]);
    assert_eq!(again.status.code(), Some(0), "{}", both(&again));
    let err = stderr(&again);
    assert!(err.contains("resuming after 4 finished runs"), "{err}");
    assert!(err.contains("\n0 runs in "), "{err}");
    // Not one byte of the results changed: no run was made again.
    assert_eq!(std::fs::read(&results_path).unwrap(), before);
}

#[test]
fn resuming_an_interrupted_campaign_runs_only_the_missing_runs() {
    let tmp = tempfile::tempdir().unwrap();
    copy_sims(tmp.path(), "sims", &SCENARIOS);
    let first = campaign(tmp.path(), "0..2", &[]);
    assert_eq!(first.status.code(), Some(0), "{}", both(&first));
    let out = tmp.path().join("out");
    let complete = results(&out);

    // Interrupted after two runs: keep the first two lines.
    let text = std::fs::read_to_string(out.join("results.jsonl")).unwrap();
    let kept: String = text
        .lines()
        .take(2)
        .map(|line| format!("{line}\n"))
        .collect();
    std::fs::write(out.join("results.jsonl"), &kept).unwrap();

    let resumed = campaign(tmp.path(), "0..2", &["--resume"]);
    assert_eq!(resumed.status.code(), Some(0), "{}", both(&resumed));
    let err = stderr(&resumed);
    assert!(err.contains("resuming after 2 finished runs"), "{err}");
    assert!(err.contains("\n2 runs in "), "{err}");
    let after = std::fs::read_to_string(out.join("results.jsonl")).unwrap();
    assert!(after.starts_with(&kept), "the kept lines were rewritten");
    let records = results(&out);
    assert_eq!(records.len(), 4);
    assert_eq!(keys(&records), every(&SCENARIOS, 0..2));
    // The runs made again are the same runs (deterministic), bar their wall time.
    assert_eq!(without_wall_time(&records), without_wall_time(&complete));
}

#[test]
fn resuming_into_the_folder_of_another_campaign_exits_2() {
    let tmp = tempfile::tempdir().unwrap();
    copy_sims(tmp.path(), "sims", &SCENARIOS);
    let first = campaign(tmp.path(), "0..1", &[]);
    assert_eq!(first.status.code(), Some(0), "{}", both(&first));
    let before = std::fs::read(tmp.path().join("out/results.jsonl")).unwrap();

    let other = campaign(tmp.path(), "0..2", &["--resume"]);
    assert_eq!(other.status.code(), Some(2), "{}", both(&other));
    let err = stderr(&other);
    assert!(
        err.contains("out/campaign.json was written by a different campaign"),
        "{err}"
    );
    assert!(err.contains("rerun without --resume"), "{err}");
    // Refused before anything was run or overwritten.
    assert_eq!(
        std::fs::read(tmp.path().join("out/results.jsonl")).unwrap(),
        before
    );
}

#[test]
fn a_torn_last_results_line_exits_2_naming_the_file_and_the_line() {
    let tmp = tempfile::tempdir().unwrap();
    copy_sims(tmp.path(), "sims", &SCENARIOS);
    let first = campaign(tmp.path(), "0..2", &[]);
    assert_eq!(first.status.code(), Some(0), "{}", both(&first));
    let path = tmp.path().join("out/results.jsonl");
    let mut text = std::fs::read_to_string(&path).unwrap();
    let last = text.lines().last().unwrap().to_owned();
    text.push_str(&last[..last.len() / 2]);
    std::fs::write(&path, text).unwrap();

    let resumed = campaign(tmp.path(), "0..2", &["--resume"]);
    assert_eq!(resumed.status.code(), Some(2), "{}", both(&resumed));
    let err = stderr(&resumed);
    assert!(
        err.contains("--resume: out/results.jsonl line 5: not a run record"),
        "{err}"
    );
    assert!(err.contains("delete it and resume"), "{err}");
}
