//! `leasesim serve`: the real binary keeps acknowledged ledger records across kill -9, and
//! refuses bad arguments with exit code 2 and a message that says what to fix.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;

use leasesim::clock::RealClock;
use leasesim::journal::{Ledger, Record, RemoteLedger, WriterId};
use leasesim::lease::{Owner, SessionId};
use leasesim::net::tcp_dialer;
use leasesim::remote::ClientConfig;

fn leasesim() -> Command {
    Command::new(env!("CARGO_BIN_EXE_leasesim"))
}

/// A served ledger process, killed (SIGKILL) when dropped.
struct LedgerProcess {
    child: Child,
    client: RemoteLedger,
}

impl LedgerProcess {
    fn start(data: &std::path::Path) -> Self {
        let mut child = leasesim()
            .args(["serve", "ledger", "--listen", "127.0.0.1:0", "--data"])
            .arg(data)
            .stdout(Stdio::piped())
            .spawn()
            .expect("start leasesim serve ledger");
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        let addr = line
            .strip_prefix("ledger service listening on ")
            .and_then(|rest| rest.split_whitespace().next())
            .unwrap_or_else(|| panic!("unexpected first line: {line:?}"));
        let clock = Arc::new(RealClock::new());
        let config = ClientConfig::default();
        let client = RemoteLedger::new(addr, tcp_dialer(), clock, &config).unwrap();
        LedgerProcess { child, client }
    }
}

impl Drop for LedgerProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn event(n: u64) -> Record {
    Record::Event {
        writer_id: WriterId {
            owner: Owner::new("replica-1", 0),
            journal: 1,
        },
        seq_in_writer: n,
        payload: format!("e{n}").into_bytes(),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn acknowledged_records_survive_kill_9_of_the_ledger_service() {
    let data = tempfile::tempdir().unwrap();
    let s1 = SessionId::new("tenant/../s1").unwrap();
    let first = LedgerProcess::start(data.path());
    for n in 1..=20 {
        assert_eq!(first.client.append(&s1, n - 1, event(n)).await, Ok(n));
    }
    drop(first);

    let second = LedgerProcess::start(data.path());
    let entries = second.client.read(&s1, 1).await.unwrap();
    let records: Vec<Record> = entries.into_iter().map(|e| e.record).collect();
    assert_eq!(records, (1..=20).map(event).collect::<Vec<_>>());
    assert_eq!(second.client.append(&s1, 20, event(21)).await, Ok(21));
    let files: Vec<_> = std::fs::read_dir(data.path()).unwrap().collect();
    assert_eq!(
        files.len(),
        1,
        "one file per session, inside the data directory"
    );
}

fn refused(args: &[&str]) -> String {
    let output = leasesim().args(args).output().unwrap();
    assert_eq!(output.status.code(), Some(2), "{args:?} should exit 2");
    String::from_utf8(output.stderr).unwrap()
}

#[test]
fn bad_arguments_exit_2_with_a_message_that_says_what_to_fix() {
    let data = tempfile::tempdir().unwrap();
    let dir = data.path().to_str().unwrap();
    let unbindable = refused(&["serve", "ledger", "--listen", "nowhere", "--data", dir]);
    assert!(unbindable.contains("--listen nowhere"), "{unbindable}");
    assert!(unbindable.contains("127.0.0.1:7070"), "{unbindable}");

    let file = data.path().join("a-file");
    std::fs::write(&file, b"x").unwrap();
    let not_a_dir = file.to_str().unwrap();
    let bad_data = refused(&[
        "serve",
        "lease",
        "--listen",
        "127.0.0.1:0",
        "--data",
        not_a_dir,
    ]);
    assert!(bad_data.contains("--data"), "{bad_data}");

    let zero_ttl = refused(&[
        "serve",
        "lease",
        "--listen",
        "127.0.0.1:0",
        "--data",
        dir,
        "--ttl",
        "0s",
    ]);
    assert!(zero_ttl.contains("must be positive"), "{zero_ttl}");
    let bad_ttl = refused(&[
        "serve",
        "lease",
        "--listen",
        "127.0.0.1:0",
        "--data",
        dir,
        "--ttl",
        "ten",
    ]);
    assert!(bad_ttl.contains("10s, 500ms or 1m30s"), "{bad_ttl}");
}
