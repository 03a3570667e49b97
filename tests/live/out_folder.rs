//! `live`'s output folder (issue 40; reliability probe N1, N7): a second command on an
//! --out in use is refused before it starts a process, and a run stopped midway never
//! leaves an earlier run's verdict files beside its own.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use leasesim_testkit::leasesim;

use super::support;

/// N1: while another command holds the folder's lock (a first `live` still running), a
/// second `live` on the same --out exits 2 at once, naming the folder, and starts nothing:
/// the first run's processes/ and data/ are its own.
#[test]
fn a_second_live_on_an_out_in_use_exits_2_before_starting_anything() {
    let _serial = support::serial();
    let (_dir, out) = out_folder("same");
    let holder = std::fs::File::create(out.join(".lock")).unwrap();
    holder.try_lock().unwrap();
    let out_arg = out.to_str().unwrap();
    let (code, _, stderr) = support::live(&[
        "--seed",
        "7",
        "--no-faults",
        "--duration",
        "2s",
        "--out",
        out_arg,
    ]);
    assert_eq!(code, 2, "{stderr}");
    assert!(
        stderr.contains("is in use by another leasesim command"),
        "{stderr}"
    );
    let entries: Vec<_> = std::fs::read_dir(&out)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(entries, [".lock"], "nothing started, nothing written");
}

/// An empty folder `name` in a fresh temporary folder (deleted when the guard drops).
fn out_folder(name: &str) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join(name);
    std::fs::create_dir_all(&out).unwrap();
    (dir, out)
}

/// Waits (at most 20 s) until `path` exists.
// A child process runs in real time: the deadline and the polling are real time too.
#[allow(clippy::disallowed_types, clippy::disallowed_methods)]
fn wait_for(path: &Path) {
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    while !path.exists() {
        assert!(
            std::time::Instant::now() < deadline,
            "{} never appeared",
            path.display()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// N7: an earlier run's clean report (summary.json, junit.xml with `failures="0"`,
/// report.md, results.jsonl, campaign.json) is removed when a new `live` starts on the same
/// --out, so killing the new run midway leaves no verdict that is not its own.
#[test]
fn a_live_run_killed_midway_leaves_no_earlier_verdict_beside_its_own() {
    let _serial = support::serial();
    let (_dir, out) = out_folder("lv");
    let stale = [
        "summary.json",
        "junit.xml",
        "report.md",
        "report.html",
        "results.jsonl",
        "campaign.json",
    ];
    for name in stale {
        std::fs::write(
            out.join(name),
            "an earlier run's clean verdict: failures=\"0\"",
        )
        .unwrap();
    }
    let mut child = leasesim!()
        .command()
        .args([
            "live",
            "--seed",
            "9",
            "--replicas",
            "2",
            "--no-faults",
            "--duration",
            "30s",
        ])
        .arg("--out")
        .arg(&out)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    wait_for(&out.join("run.json"));
    child.kill().unwrap();
    child.wait().unwrap();
    for name in stale {
        assert!(
            !out.join(name).exists(),
            "{name} of the earlier run is still there"
        );
    }
}
