//! `--shard K/N` and `report merge`: the shards of a campaign together make exactly the
//! unsharded campaign.

use std::path::Path;
use std::process::Output;

use crate::support::{both, copy_sims, every, keys, leasesim, results, without_wall_time};

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
