//! No child outlives the orchestrator, even when it is SIGKILLed mid-run (PR_SET_PDEATHSIG,
//! set from the spawner thread); a child that dies of something the nemesis did not do makes
//! the run a harness error, and the orchestrator still reaps every other child.

// Real processes and real sockets: bounded waits in real time.
#![allow(clippy::disallowed_methods, clippy::disallowed_types)]
use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

use leasesim_testkit::leasesim;

use super::support;

/// The pids whose parent is `parent` (from /proc).
fn children_of(parent: u32) -> Vec<u32> {
    let mut children = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else {
            continue;
        };
        // pid (comm) state ppid …: comm may hold spaces, so split after the last ')'.
        let Some((_, rest)) = stat.rsplit_once(')') else {
            continue;
        };
        let ppid: Option<u32> = rest.split_whitespace().nth(1).and_then(|p| p.parse().ok());
        if ppid == Some(parent) {
            children.push(pid);
        }
    }
    children
}

fn alive(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
        !stat
            .rsplit_once(')')
            .is_some_and(|(_, r)| r.trim_start().starts_with('Z'))
    })
}

/// Kills the orchestrator if the test fails before it does.
struct Guard(std::process::Child);

impl Drop for Guard {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn a_sigkilled_orchestrator_leaves_none_of_its_children_behind() {
    let _serial = support::serial();
    let dir = tempfile::tempdir().unwrap();
    let child = leasesim!()
        .command()
        .args([
            "live",
            "--seed",
            "2",
            "--no-faults",
            "--duration",
            "30s",
            "--out",
        ])
        .arg(dir.path().join("out"))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut orchestrator = Guard(child);
    let pid = orchestrator.0.id();
    // The services and the 3 replicas.
    let deadline = Instant::now() + Duration::from_secs(20);
    let mut children = Vec::new();
    while Instant::now() < deadline {
        children = children_of(pid);
        if children.len() >= 5 {
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(children.len() >= 5, "children started: {children:?}");
    orchestrator.0.kill().unwrap();
    orchestrator.0.wait().unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    while Instant::now() < deadline && children.iter().any(|&c| alive(c)) {
        std::thread::sleep(Duration::from_millis(50));
    }
    let left: Vec<u32> = children.iter().copied().filter(|&c| alive(c)).collect();
    assert!(left.is_empty(), "children left behind: {left:?}");
}

/// The pid of `host`'s boot 0, from its `start` nemesis line in the orchestrator's file
/// (`boot 0, pid N, on ADDR`), once it is there.
fn started_pid(out: &Path, host: &str) -> Option<u32> {
    let text = std::fs::read_to_string(out.join("processes/orchestrator.jsonl")).ok()?;
    text.lines().find_map(|line| {
        let line: serde_json::Value = serde_json::from_str(line).ok()?;
        if line["kind"] != "nemesis" || line["host"] != host || line["action"] != "start" {
            return None;
        }
        let detail = line["detail"].as_str()?;
        let (_, rest) = detail.split_once("pid ")?;
        rest.split(',').next()?.trim().parse().ok()
    })
}

/// A run without faults: the only death is the test's. TTL 1 s keeps the stop short
/// (SIGKILL past 2·TTL + 6 s).
const KILLED_FROM_OUTSIDE: &str = r#"v = 1
about = "no faults; the test SIGKILLs the ledger service from outside the nemesis"

[world]
replicas = 2
sessions = ["s1"]
ttl_ms = 1000
duration_s = 30

[workload]
think_ms = [20, 200]
"#;

/// The ledger's pid, checked to be a child of `orchestrator` (so never a reused pid), once
/// the 2 services and 2 replicas of the run in `out` run; and the children then.
fn ledger_among_children(out: &Path, orchestrator: u32) -> (u32, Vec<u32>) {
    let deadline = Instant::now() + Duration::from_secs(30);
    let mut children = Vec::new();
    let mut ledger = None;
    while Instant::now() < deadline {
        children = children_of(orchestrator);
        ledger = started_pid(out, "ledger").filter(|p| children.contains(p));
        if ledger.is_some() && children.len() >= 4 {
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let ledger = ledger.unwrap_or_else(|| panic!("no ledger among children {children:?}"));
    assert!(children.len() >= 4, "children started: {children:?}");
    (ledger, children)
}

/// The orchestrator's exit status, within 45 s.
fn exit_within_45_s(orchestrator: &mut Guard) -> std::process::ExitStatus {
    let deadline = Instant::now() + Duration::from_secs(45);
    loop {
        if let Some(status) = orchestrator.0.try_wait().unwrap() {
            return status;
        }
        assert!(
            Instant::now() < deadline,
            "the orchestrator still runs 45 s after the kill"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Never a verdict in `out`: no result.json, no verdict line in `stdout`, and the run's
/// record says it was a harness error of the ledger's SIGKILL.
fn the_run_is_recorded_as_a_harness_error(out: &Path, stdout: &str) {
    assert!(!out.join("result.json").exists(), "{stdout}");
    assert!(!stdout.contains("verdict:"), "{stdout}");
    let results = std::fs::read_to_string(out.join("results.jsonl")).unwrap();
    let records: Vec<serde_json::Value> = results
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(records.len(), 1, "{results}");
    assert_eq!(records[0]["status"], "harness-error", "{results}");
    let error = records[0]["error"].as_str().unwrap_or("");
    assert!(
        error.contains("ledger") && error.contains("signal: 9"),
        "{error}"
    );
}

#[test]
fn a_child_killed_from_outside_the_nemesis_makes_the_run_a_harness_error_never_a_verdict() {
    let _serial = support::serial();
    let dir = tempfile::tempdir().unwrap();
    let scenario = dir.path().join("killed-from-outside.toml");
    std::fs::write(&scenario, KILLED_FROM_OUTSIDE).unwrap();
    let out = dir.path().join("out");
    let stdout = std::fs::File::create(dir.path().join("stdout")).unwrap();
    let stderr = std::fs::File::create(dir.path().join("stderr")).unwrap();
    let child = leasesim!()
        .command()
        .args(["live", "--seed", "5", "--timeout", "60s", "--scenario"])
        .arg(&scenario)
        .arg("--out")
        .arg(&out)
        .stdout(stdout)
        .stderr(stderr)
        .spawn()
        .unwrap();
    let mut orchestrator = Guard(child);
    let (ledger, children) = ledger_among_children(&out, orchestrator.0.id());
    // Let the replicas work against it for a moment first.
    std::thread::sleep(Duration::from_millis(1_500));
    // SAFETY: kill(2) on a live child of the orchestrator, which has not reaped it.
    assert_eq!(
        unsafe { libc::kill(i32::try_from(ledger).unwrap(), libc::SIGKILL) },
        0
    );
    let status = exit_within_45_s(&mut orchestrator);
    let stdout = std::fs::read_to_string(dir.path().join("stdout")).unwrap();
    let stderr = std::fs::read_to_string(dir.path().join("stderr")).unwrap();
    // Exit 3, the harness error, with the host and its exit status named.
    assert_eq!(status.code(), Some(3), "{stdout}\n{stderr}");
    assert!(
        stderr.contains("ledger (boot 0) exited by itself (signal: 9"),
        "{stderr}"
    );
    the_run_is_recorded_as_a_harness_error(&out, &stdout);
    // Every other child was stopped and reaped: none is left behind.
    let left: Vec<u32> = children.iter().copied().filter(|&c| alive(c)).collect();
    assert!(left.is_empty(), "children left behind: {left:?}");
}
