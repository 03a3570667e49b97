//! `leasesim replica`: a replica incarnation against real services writes a file that starts
//! with its clock line, records every operation at invocation and again at completion,
//! checks validity before each append, and on SIGTERM shuts down gracefully (releasing its
//! lease) and exits 0; a flock pair shares one directory; bad arguments exit 2.

// Real processes on real time: a live test waits for them and reads the machine's clock.
#![allow(clippy::disallowed_methods)]

use std::collections::BTreeMap;
use std::time::Duration;

use leasesim::history::{HistRecord, Line, Op, OpLine, OpResult, Outcome};

use super::spawned::{Run, Spawned, WAIT, lines_of};
use super::support::serial;

/// How long a replica runs its workload in these tests.
const RUNNING: Duration = Duration::from_secs(3);

/// The file's operations by id: (the invocation line, the completion line).
fn ops_by_id(lines: &[Line]) -> BTreeMap<u64, Vec<OpLine>> {
    let mut ops: BTreeMap<u64, Vec<OpLine>> = BTreeMap::new();
    for line in lines {
        if let Line::Op(op) = line {
            ops.entry(op.id).or_default().push(op.clone());
        }
    }
    ops
}

/// Checks what every replica file must hold and returns its operations, completed.
fn check_replica_file(lines: &[Line], replica: &str) -> Vec<OpLine> {
    match lines.first() {
        Some(Line::Clock(clock)) => {
            assert_eq!((clock.host.as_str(), clock.boot), (replica, 0));
            assert_eq!(clock.drift_ppm, 0);
            assert!(!clock.suspended);
        }
        other => panic!("the first line is not the clock line: {other:?}"),
    }
    let ops = ops_by_id(lines);
    assert_eq!(ops.keys().next(), Some(&1), "ids count from 1");
    let mut completed = Vec::new();
    for (id, lines) in ops {
        assert_eq!(
            lines.len(),
            2,
            "op {id}: one line at invocation, one at completion"
        );
        let (invoked, done) = (&lines[0], &lines[1]);
        assert!(invoked.is_pending(), "op {id}: the first line is pending");
        assert!(!done.is_pending(), "op {id}: the second line is completed");
        assert_eq!(
            (
                &invoked.op,
                &invoked.session,
                invoked.invoke_us,
                invoked.invoke_local_us
            ),
            (
                &done.op,
                &done.session,
                done.invoke_us,
                done.invoke_local_us
            ),
            "op {id}: the completion repeats the invocation"
        );
        assert!(done.complete_us.unwrap() >= done.invoke_us);
        assert_eq!(done.process.replica, replica);
        completed.push(done.clone());
    }
    // A validity check comes before every event append the replica sends.
    for (at, line) in lines.iter().enumerate() {
        if let Line::Op(op) = line
            && op.is_pending()
            && let Op::LedgerAppend {
                record: HistRecord::Event { .. },
                ..
            } = &op.op
        {
            let checked = lines[..at].iter().any(
                |earlier| matches!(earlier, Line::Validity(v) if v.session == op.session && v.at_us <= op.invoke_us),
            );
            assert!(
                checked,
                "op {}: an append with no validity check before it",
                op.id
            );
        }
    }
    completed
}

/// The (session, seq) of every append the ledger acknowledged to these operations.
fn acknowledged(ops: &[OpLine]) -> Vec<(String, u64)> {
    ops.iter()
        .filter_map(|op| match (&op.op, &op.outcome, &op.result) {
            (Op::LedgerAppend { .. }, Outcome::Ok, Some(OpResult::Appended { seq })) => {
                Some((op.session.clone(), *seq))
            }
            _ => None,
        })
        .collect()
}

/// The (session, seq) of every `ledger` line.
fn final_ledger(lines: &[Line]) -> Vec<(String, u64)> {
    lines
        .iter()
        .filter_map(|line| match line {
            Line::Ledger(l) => Some((l.session.clone(), l.seq)),
            _ => None,
        })
        .collect()
}

fn released_ok(ops: &[OpLine]) -> bool {
    ops.iter()
        .any(|op| matches!(op.op, Op::LeaseRelease { .. }) && op.outcome == Outcome::Ok)
}

#[test]
fn a_replica_against_real_services_records_its_operations_and_releases_on_sigterm() {
    let _serial = serial();
    let run = Run::new(1, &["s1"], 1_000, None);
    let (mut lease, lease_addr) = run.serve("lease", 0);
    let (mut ledger, ledger_addr) = run.serve("ledger", 0);
    let mut replica =
        Spawned::start(run.replica_command(1, 0, &format!("grpc://{lease_addr}"), &ledger_addr));
    let history = run.path("replica-1-0.jsonl");
    assert_eq!(
        replica.banner.trim_end(),
        format!(
            "replica replica-1#0 running (history {})",
            history.display()
        )
    );
    std::thread::sleep(RUNNING);
    assert!(replica.stop().success(), "SIGTERM: exit 0");

    let lines = lines_of(&history);
    let ops = check_replica_file(&lines, "replica-1");
    assert!(
        ops.iter()
            .any(|op| matches!(op.op, Op::JournalAppend { .. }) && op.outcome == Outcome::Ok),
        "the workload appended in {RUNNING:?}"
    );
    assert!(
        released_ok(&ops),
        "the graceful shutdown released the lease"
    );
    assert!(lease.stop().success());
    assert!(ledger.stop().success());

    let ledger_lines = lines_of(&run.path("ledger-0.jsonl"));
    assert!(matches!(&ledger_lines[0], Line::Clock(c) if c.host == "ledger" && c.boot == 0));
    let mut seen = acknowledged(&ops);
    seen.sort();
    let mut kept = final_ledger(&ledger_lines);
    kept.sort();
    assert!(!seen.is_empty());
    assert!(
        seen.iter().all(|ack| kept.contains(ack)),
        "every acknowledged append is in the final ledger: {seen:?} vs {kept:?}"
    );
    assert!(
        ledger_lines
            .last()
            .is_some_and(|l| matches!(l, Line::Ledger(_))),
        "the file ends with the final ledger"
    );
}

#[test]
fn two_flock_replicas_share_one_lease_directory_and_both_stop_cleanly() {
    let _serial = serial();
    let run = Run::new(2, &["s1"], 1_000, None);
    let leases = run.path("leases");
    std::fs::create_dir(&leases).unwrap();
    let target = format!("flock:{}", leases.display());
    let (mut ledger, ledger_addr) = run.serve("ledger", 0);
    let mut replicas: Vec<Spawned> = (1..=2)
        .map(|k| Spawned::start(run.replica_command(k, 0, &target, &ledger_addr)))
        .collect();
    std::thread::sleep(RUNNING);
    for replica in &replicas {
        replica.terminate();
    }
    for replica in &mut replicas {
        assert!(replica.wait(WAIT).success(), "SIGTERM: exit 0");
    }
    assert!(ledger.stop().success());
    let mut seen = Vec::new();
    for k in 1..=2 {
        let name = format!("replica-{k}");
        let ops = check_replica_file(&lines_of(&run.path(&format!("{name}-0.jsonl"))), &name);
        assert!(
            ops.iter()
                .any(|op| matches!(op.op, Op::LeaseAcquire { .. }) && op.outcome == Outcome::Ok),
            "{name} got the lease at least once in {RUNNING:?}"
        );
        seen.extend(acknowledged(&ops));
    }
    let kept = final_ledger(&lines_of(&run.path("ledger-0.jsonl")));
    assert!(
        seen.iter().all(|ack| kept.contains(ack)),
        "{seen:?} vs {kept:?}"
    );
    // One writer at a time on one session: no seq acknowledged twice.
    let mut seqs = seen.clone();
    seqs.sort();
    seqs.dedup();
    assert_eq!(
        seqs.len(),
        seen.len(),
        "a seq acknowledged to two appends: {seen:?}"
    );
}

/// Runs `leasesim replica` with a mistake and returns its exit code and stderr.
fn refused(command: &mut std::process::Command) -> (Option<i32>, String) {
    let output = command.output().unwrap();
    (
        output.status.code(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

#[test]
fn bad_arguments_exit_2_saying_what_to_fix() {
    let _serial = serial();
    let run = Run::new(1, &["s1"], 1_000, None);
    let ledger = "127.0.0.1:1";

    let (code, stderr) = refused(&mut run.replica_command(3, 0, "grpc://127.0.0.1:1", ledger));
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.contains("--name `replica-3`"), "{stderr}");

    let (code, stderr) = refused(&mut run.replica_command(1, 0, "http://x", ledger));
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.contains("grpc://HOST:PORT"), "{stderr}");

    let mut no_epoch = run.replica_command(1, 0, "grpc://127.0.0.1:1", ledger);
    no_epoch.env_remove(leasesim::live::truth::EPOCH_ENV);
    let (code, stderr) = refused(&mut no_epoch);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.contains("LEASESIM_LIVE_EPOCH_NS"), "{stderr}");

    let mut bad_drift = run.replica_command(1, 0, "grpc://127.0.0.1:1", ledger);
    bad_drift.env("LEASESIM_LIVE_DRIFT_PPM", "fast");
    let (code, stderr) = refused(&mut bad_drift);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.contains("LEASESIM_LIVE_DRIFT_PPM"), "{stderr}");

    std::fs::write(run.path("run.json"), "{not a run file").unwrap();
    let (code, stderr) = refused(&mut run.replica_command(1, 0, "grpc://127.0.0.1:1", ledger));
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.contains("--run"), "{stderr}");
}

#[test]
fn an_incarnation_never_writes_over_an_earlier_file() {
    let _serial = serial();
    let run = Run::new(1, &["s1"], 1_000, None);
    std::fs::write(run.path("replica-1-0.jsonl"), "").unwrap();
    let (code, stderr) =
        refused(&mut run.replica_command(1, 0, "grpc://127.0.0.1:1", "127.0.0.1:1"));
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.contains("--history"), "{stderr}");
    assert_eq!(std::fs::read(run.path("replica-1-0.jsonl")).unwrap(), b"");
}

#[cfg(not(feature = "etcd"))]
#[test]
fn an_etcd_target_without_the_etcd_feature_exits_2() {
    let _serial = serial();
    let run = Run::new(1, &["s1"], 1_000, None);
    let (code, stderr) =
        refused(&mut run.replica_command(1, 0, "etcd://127.0.0.1:2379", "127.0.0.1:1"));
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.contains("`etcd` feature"), "{stderr}");
}
