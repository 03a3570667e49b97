//! `leasesim serve lease|ledger --run RUN.json --history FILE --boot N`: the lease service
//! records its clock line then every decision; the ledger service records its clock line and,
//! when it stops, the final ledger of the run's sessions; both run the run file's mutant; the
//! live flags come together and `--run` conflicts with `--ttl`.

use std::sync::Arc;

use leasesim::clock::RealClock;
use leasesim::history::{Decision, Line};
use leasesim::journal::{Ledger, LedgerError, Record, RemoteLedger};
use leasesim::lease::{Owner, RemoteLease, SessionId, SessionLease};
use leasesim::net::tcp_dialer;
use leasesim::remote::{ClientConfig, RemoteChannel};

use super::spawned::{Run, lines_of};
use super::support::{self, serial};

use crate::records;

fn event(n: u64) -> Record {
    records::event(Owner::new("replica-1", 0), 1, n, &format!("e{n}"))
}

fn ledger_client(addr: &str) -> RemoteLedger {
    RemoteChannel::new(
        addr,
        tcp_dialer(),
        Arc::new(RealClock::new()),
        &ClientConfig::default(),
    )
    .map(RemoteLedger::new)
    .unwrap()
}

#[test]
fn the_lease_service_records_its_clock_line_then_each_decision() {
    let _serial = serial();
    let run = Run::new(1, &["s1"], 2_000, None);
    let (mut service, addr) = run.serve("lease", 3);
    support::runtime().block_on(async {
        let client = RemoteChannel::new(
            &addr,
            tcp_dialer(),
            Arc::new(RealClock::new()),
            &ClientConfig::default(),
        )
        .map(RemoteLease::new)
        .unwrap();
        let s1 = SessionId::new("s1").unwrap();
        let lease = client
            .acquire(&s1, &Owner::new("replica-1", 0))
            .await
            .unwrap();
        assert_eq!(lease.ttl().as_millis(), 2_000, "the run file's TTL");
        let renewed = client.renew(&lease).await.unwrap();
        client.release(&renewed).await.unwrap();
    });
    assert!(service.stop().success());
    let lines = lines_of(&run.path("lease-3.jsonl"));
    assert!(
        matches!(&lines[0], Line::Clock(c) if c.host == "lease" && c.boot == 3),
        "{:?}",
        lines[0]
    );
    let decisions: Vec<&Decision> = lines[1..]
        .iter()
        .map(|line| match line {
            Line::Decision(d) => {
                assert_eq!(
                    (d.session.as_str(), d.owner.replica.as_str()),
                    ("s1", "replica-1")
                );
                &d.decision
            }
            other => panic!("not a decision: {other:?}"),
        })
        .collect();
    assert!(
        matches!(
            decisions[..],
            [
                Decision::Grant { .. },
                Decision::Renew { .. },
                Decision::Release { ended: true, .. }
            ]
        ),
        "{decisions:?}"
    );
}

#[test]
fn the_ledger_service_records_the_final_ledger_of_the_runs_sessions_when_it_stops() {
    let _serial = serial();
    let run = Run::new(1, &["s1", "s2"], 1_000, None);
    let (mut service, addr) = run.serve("ledger", 0);
    support::runtime().block_on(async {
        let client = ledger_client(&addr);
        let (s1, s2) = (SessionId::new("s1").unwrap(), SessionId::new("s2").unwrap());
        let other = SessionId::new("not-in-the-run").unwrap();
        assert_eq!(client.append(&s1, 0, event(1)).await, Ok(1));
        assert_eq!(client.append(&s1, 1, event(2)).await, Ok(2));
        assert_eq!(client.append(&s2, 0, event(3)).await, Ok(1));
        assert_eq!(client.append(&other, 0, event(4)).await, Ok(1));
        // Without the mutant, a stale expected tip is refused.
        assert!(matches!(
            client.append(&s1, 0, event(5)).await,
            Err(LedgerError::Conflict { .. })
        ));
    });
    assert!(service.stop().success());
    let lines = lines_of(&run.path("ledger-0.jsonl"));
    assert!(matches!(&lines[0], Line::Clock(c) if c.host == "ledger" && c.boot == 0));
    let kept: Vec<(String, u64)> = lines[1..]
        .iter()
        .map(|line| match line {
            Line::Ledger(l) => (l.session.clone(), l.seq),
            other => panic!("not a ledger line: {other:?}"),
        })
        .collect();
    let expected = [("s1", 1), ("s1", 2), ("s2", 1)].map(|(s, n)| (s.to_owned(), n));
    assert_eq!(kept, expected);
}

#[test]
fn the_ledger_service_runs_the_run_files_mutant() {
    let _serial = serial();
    let run = Run::new(1, &["s1"], 1_000, Some("append-ignores-expected-tip"));
    let (mut service, addr) = run.serve("ledger", 0);
    support::runtime().block_on(async {
        let client = ledger_client(&addr);
        let s1 = SessionId::new("s1").unwrap();
        assert_eq!(client.append(&s1, 0, event(1)).await, Ok(1));
        assert_eq!(
            client.append(&s1, 0, event(2)).await,
            Ok(2),
            "the planted bug appends at a stale expected tip"
        );
    });
    assert!(service.stop().success());
}

#[test]
fn the_live_flags_come_together_and_the_run_file_gives_the_ttl() {
    let _serial = serial();
    let run = Run::new(1, &["s1"], 1_000, None);
    let data = run.path("data");
    let history = run.path("lease-0.jsonl");
    let attempts: [Vec<&str>; 3] = [
        vec![
            "--run",
            "RUN",
            "--history",
            "H",
            "--boot",
            "0",
            "--ttl",
            "1s",
        ],
        vec!["--history", "H"],
        vec!["--run", "RUN", "--boot", "0"],
    ];
    for extra in attempts {
        let mut command = run.command(&["serve", "lease", "--listen", "127.0.0.1:0"]);
        command.arg("--data").arg(&data);
        for arg in &extra {
            match *arg {
                "RUN" => command.arg(run.path("run.json")),
                "H" => command.arg(&history),
                other => command.arg(other),
            };
        }
        let output = command.output().unwrap();
        assert_eq!(output.status.code(), Some(2), "{extra:?}");
    }
    assert!(!history.exists(), "a refused service writes no history");
}
