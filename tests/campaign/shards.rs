//! `--shard K/N` and `report merge`: the shards of a campaign together make exactly the
//! unsharded campaign.

use std::path::Path;
use std::process::Output;

use crate::support::{both, copy_sims, every, keys, leasesim, results, stderr, without_wall_time};

const SCENARIOS: [&str; 2] = ["f1-pause-longer-than-ttl", "f6-late-release"];

fn campaign(root: &Path, out: &str, shard: Option<&str>) -> Output {
    let mut args = vec![
        "campaign",
        "--sims",
        "sims",
        "--seeds",
        "0..3",
        "--jobs",
        "1",
        "--no-progress",
        "--out",
        out,
    ];
    if let Some(shard) = shard {
        args.extend(["--shard", shard]);
    }
    leasesim(root, &args)
}

#[test]
fn two_shards_merged_are_exactly_the_unsharded_campaign() {
    let tmp = tempfile::tempdir().unwrap();
    copy_sims(tmp.path(), "sims", &SCENARIOS);
    for (out, shard) in [("a", "1/2"), ("b", "2/2")] {
        let output = campaign(tmp.path(), out, Some(shard));
        assert_eq!(output.status.code(), Some(0), "{}", both(&output));
    }
    let (a, b) = (
        results(&tmp.path().join("a")),
        results(&tmp.path().join("b")),
    );
    // Six runs split 3 + 3, with nothing in both.
    assert_eq!((a.len(), b.len()), (3, 3));
    let (a_keys, b_keys) = (keys(&a), keys(&b));
    assert!(
        a_keys.iter().all(|k| !b_keys.contains(k)),
        "{a_keys:?} {b_keys:?}"
    );

    let merged = leasesim(tmp.path(), &["report", "merge", "a", "b", "--out", "c"]);
    assert_eq!(merged.status.code(), Some(0), "{}", both(&merged));
    let c = results(&tmp.path().join("c"));
    assert_eq!(keys(&c), every(&SCENARIOS, 0..3));

    let whole = campaign(tmp.path(), "whole", None);
    assert_eq!(whole.status.code(), Some(0), "{}", both(&whole));
    let whole_results = results(&tmp.path().join("whole"));
    assert_eq!(keys(&c), keys(&whole_results));
    // The same runs, not merely the same keys.
    assert_eq!(without_wall_time(&c), without_wall_time(&whole_results));

    // The merged report says where it came from, and judges like the whole campaign.
    let report = std::fs::read_to_string(tmp.path().join("c/report.md")).unwrap();
    assert!(report.contains("| shard | 1/2+2/2 |"), "{report}");
    let whole_report = std::fs::read_to_string(tmp.path().join("whole/report.md")).unwrap();
    let body = |text: &str| text.split("\n## Checks\n").nth(1).unwrap().to_owned();
    assert_eq!(body(&report), body(&whole_report));
}

/// Bad-input probe D7: 2 of 3 shards merged were "clean (exit 0)".
#[test]
fn a_merge_missing_a_shard_is_incomplete_exit_6_naming_it() {
    let tmp = tempfile::tempdir().unwrap();
    copy_sims(tmp.path(), "sims", &SCENARIOS);
    for (out, shard) in [("a", "1/3"), ("b", "2/3")] {
        let output = campaign(tmp.path(), out, Some(shard));
        assert_eq!(output.status.code(), Some(0), "{}", both(&output));
    }
    let merged = leasesim(tmp.path(), &["report", "merge", "a", "b", "--out", "c"]);
    assert_eq!(merged.status.code(), Some(6), "{}", both(&merged));
    let report = std::fs::read_to_string(tmp.path().join("c/report.md")).unwrap();
    assert!(report.contains("(exit 6)**"), "{report}");
    assert!(
        report.contains("2 of 6 planned runs have no record:"),
        "{report}"
    );
    assert!(report.contains("- shard 3/3 (not merged)"), "{report}");
    // Rendered again, the merged folder still knows it is incomplete.
    let render = leasesim(tmp.path(), &["report", "render", "c"]);
    assert_eq!(render.status.code(), Some(6), "{}", both(&render));

    // A tampered shard in a campaign.json is refused.
    let path = tmp.path().join("b/campaign.json");
    let text = std::fs::read_to_string(&path).unwrap();
    std::fs::write(&path, text.replace("\"2/3\"", "\"7/3\"")).unwrap();
    let tampered = leasesim(tmp.path(), &["report", "merge", "a", "b", "--out", "d"]);
    assert_eq!(tampered.status.code(), Some(2), "{}", both(&tampered));
    assert!(
        stderr(&tampered).contains("`7/3` is not a shard"),
        "{}",
        stderr(&tampered)
    );
}

/// Bad-input probe D7: `--shard 30/30` of 20 runs exited 0 "clean" with no run.
#[test]
fn a_shard_that_owns_no_run_exits_2() {
    let tmp = tempfile::tempdir().unwrap();
    copy_sims(tmp.path(), "sims", &SCENARIOS);
    let output = campaign(tmp.path(), "a", Some("7/7"));
    assert_eq!(output.status.code(), Some(2), "{}", both(&output));
    let err = stderr(&output);
    assert!(
        err.contains(
            "--shard 7/7: this shard owns no run: the campaign has 6 runs (3 seeds × 2 scenarios)"
        ),
        "{err}"
    );
}

/// Bad-input probe D7: records outside the campaign were counted, an empty results file
/// was "clean".
#[test]
fn render_refuses_stray_records_and_calls_empty_results_incomplete() {
    let tmp = tempfile::tempdir().unwrap();
    copy_sims(tmp.path(), "sims", &SCENARIOS);
    let output = campaign(tmp.path(), "a", None);
    assert_eq!(output.status.code(), Some(0), "{}", both(&output));
    let path = tmp.path().join("a/results.jsonl");
    let text = std::fs::read_to_string(&path).unwrap();
    let first = text.lines().next().unwrap();
    let stray = first.replacen("\"seed\":0", "\"seed\":9", 1);
    assert_ne!(stray, first);
    std::fs::write(&path, format!("{text}{stray}\n")).unwrap();
    let render = leasesim(tmp.path(), &["report", "render", "a"]);
    assert_eq!(render.status.code(), Some(2), "{}", both(&render));
    let err = stderr(&render);
    assert!(
        err.contains("1 records are not runs of this campaign (seeds 0..3"),
        "{err}"
    );
    assert!(err.contains("seed 9"), "{err}");

    std::fs::write(&path, "").unwrap();
    let empty = leasesim(tmp.path(), &["report", "render", "a"]);
    assert_eq!(empty.status.code(), Some(6), "{}", both(&empty));
    let report = std::fs::read_to_string(tmp.path().join("a/report.md")).unwrap();
    assert!(
        report.contains("6 of 6 planned runs have no record:"),
        "{report}"
    );
}
