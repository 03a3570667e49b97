//! No child outlives the orchestrator, even when it is SIGKILLed mid-run (PR_SET_PDEATHSIG,
//! set from the spawner thread).

// Real processes and real sockets: bounded waits in real time.
#![allow(clippy::disallowed_methods, clippy::disallowed_types)]
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

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
    let child = Command::new(support::leasesim())
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
