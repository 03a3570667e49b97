//! `leasesim serve`: the real binary keeps acknowledged ledger records across kill -9,
//! refuses bad arguments and a data directory another service holds with exit code 2 and a
//! message that says what to fix, and warns when recovery cuts a damaged log tail.

use std::io::{BufRead, BufReader, Read};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;

use leasesim::clock::RealClock;
use leasesim::journal::{Ledger, Record, RemoteLedger};
use leasesim::lease::{Owner, RemoteLease, STATE_FILE, SessionId, SessionLease};
use leasesim::net::tcp_dialer;
use leasesim::remote::{ClientConfig, RemoteChannel};
use leasesim_testkit::{assert_exit, leasesim};

use crate::records;

/// A `leasesim serve SERVICE` process on a free loopback port, killed (SIGKILL) when
/// dropped; its stderr is captured and `RUST_LOG` unset, so the default log level applies.
struct ServiceProcess {
    child: Child,
    addr: String,
}

impl ServiceProcess {
    fn start(service: &str, data: &Path) -> Self {
        let mut child = leasesim!()
            .command()
            .args(["serve", service, "--listen", "127.0.0.1:0", "--data"])
            .arg(data)
            .env_remove("RUST_LOG")
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("start leasesim serve {service}: {e}"));
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        let prefix = format!("{service} service listening on ");
        let addr = line
            .strip_prefix(&prefix)
            .and_then(|rest| rest.split_whitespace().next())
            .unwrap_or_else(|| panic!("unexpected first line: {line:?}"))
            .to_owned();
        ServiceProcess { child, addr }
    }

    /// Kills the process and returns everything it wrote to stderr.
    fn kill_and_read_stderr(mut self) -> String {
        let _ = self.child.kill();
        let mut stderr = String::new();
        let mut pipe = self.child.stderr.take().unwrap();
        pipe.read_to_string(&mut stderr).unwrap();
        stderr
    }
}

impl Drop for ServiceProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A served ledger process and a client for it; the process is killed (SIGKILL) when dropped.
struct LedgerProcess {
    _process: ServiceProcess,
    client: RemoteLedger,
}

impl LedgerProcess {
    fn start(data: &Path) -> Self {
        let process = ServiceProcess::start("ledger", data);
        let clock = Arc::new(RealClock::new());
        let config = ClientConfig::default();
        let client = RemoteChannel::new(&process.addr, tcp_dialer(), clock, &config)
            .map(RemoteLedger::new)
            .unwrap();
        LedgerProcess {
            _process: process,
            client,
        }
    }
}

fn event(n: u64) -> Record {
    records::event(Owner::new("replica-1", 0), 1, n, &format!("e{n}"))
}

/// Serves the ledger on `data`, appends events 1..=`count` to `session`, each acknowledged,
/// then kills the service (SIGKILL).
async fn acknowledge_events(data: &Path, session: &SessionId, count: u64) {
    let first = LedgerProcess::start(data);
    for n in 1..=count {
        assert_eq!(first.client.append(session, n - 1, event(n)).await, Ok(n));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn acknowledged_records_survive_kill_9_of_the_ledger_service() {
    let data = tempfile::tempdir().unwrap();
    let s1 = SessionId::new("tenant/../s1").unwrap();
    acknowledge_events(data.path(), &s1, 20).await;

    let second = LedgerProcess::start(data.path());
    let entries = second.client.read(&s1, 1).await.unwrap();
    let records: Vec<Record> = entries.into_iter().map(|e| e.record).collect();
    assert_eq!(records, (1..=20).map(event).collect::<Vec<_>>());
    assert_eq!(second.client.append(&s1, 20, event(21)).await, Ok(21));
    let mut files: Vec<_> = std::fs::read_dir(data.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    files.sort();
    assert_eq!(
        files,
        [
            "ledger-checkpoint.log".to_string(),
            leasesim::storage::safe_name(s1.as_str(), ".ledger")
        ],
        "one file per session and the checkpoint, inside the data directory"
    );
}

/// `serve SERVICE --listen 127.0.0.1:0 --data DIR EXTRA…`.
fn serve_args<'a>(service: &'a str, dir: &'a str, extra: &[&'a str]) -> Vec<&'a str> {
    let mut args = vec!["serve", service, "--listen", "127.0.0.1:0", "--data", dir];
    args.extend_from_slice(extra);
    args
}

/// Asserts `leasesim ARGS` exits 2 with every one of `expected` in its stderr.
fn refused(args: &[&str], expected: &[&str]) {
    assert_exit(&leasesim!().run(args), 2, expected);
}

#[test]
fn bad_arguments_exit_2_with_a_message_that_says_what_to_fix() {
    let data = tempfile::tempdir().unwrap();
    let dir = data.path().to_str().unwrap();
    refused(
        &["serve", "ledger", "--listen", "nowhere", "--data", dir],
        &["--listen nowhere", "127.0.0.1:7070"],
    );

    let file = data.path().join("a-file");
    std::fs::write(&file, b"x").unwrap();
    let not_a_dir = file.to_str().unwrap();
    refused(&serve_args("lease", not_a_dir, &[]), &["--data"]);
    refused(
        &serve_args("lease", dir, &["--ttl", "0s"]),
        &["must be positive"],
    );
    refused(
        &serve_args("lease", dir, &["--ttl", "ten"]),
        &["10s, 500ms or 1m30s"],
    );
}

#[test]
fn ttl_and_grace_persist_interval_above_their_caps_exit_2() {
    let data = tempfile::tempdir().unwrap();
    let dir = data.path().to_str().unwrap();
    // Accepted before the cap, then every acquire overflowed in the handler.
    refused(
        &serve_args("lease", dir, &["--ttl", "18446744073709551615s"]),
        &["--ttl", "the limit is 1day"],
    );
    refused(
        &serve_args("lease", dir, &["--ttl", "1day 1s"]),
        &["the limit is 1day"],
    );
    refused(
        &serve_args("lease", dir, &["--grace-persist-interval", "2h"]),
        &["--grace-persist-interval", "the limit is 1h"],
    );
    assert_eq!(
        std::fs::read_dir(dir).unwrap().count(),
        0,
        "refused before touching the data directory"
    );
}

/// Two services on one directory would each grant token 1 (lease) or acknowledge the same
/// position twice (ledger): the second must not start, and must start once the first is
/// gone — even after kill -9, since the OS drops the lock with the process.
#[test]
fn a_second_service_on_a_data_directory_in_use_exits_2_until_the_first_dies() {
    for service in ["lease", "ledger"] {
        let data = tempfile::tempdir().unwrap();
        let dir = data.path().to_str().unwrap();
        let first = ServiceProcess::start(service, data.path());
        for other in ["lease", "ledger"] {
            refused(
                &serve_args(other, dir, &[]),
                &[
                    "is in use by another process",
                    dir,
                    "stop the other process",
                ],
            );
        }
        drop(first); // kill -9
        let _after = ServiceProcess::start(service, data.path());
    }
}

/// Bytes a crash leaves of an append torn after its first 10 bytes: a frame header whose
/// length promises more than follows.
const TORN_APPEND: [u8; 10] = [16, 0, 0, 0, 0xa5, 0xa5, 0xa5, 0xa5, 0xa5, 0xa5];

/// A torn last write of `lease-state.log` (never acknowledged) is cut; the restarted service
/// must say so on stderr at the default log level.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_torn_last_frame_cut_at_recovery_is_reported_on_stderr() {
    let data = tempfile::tempdir().unwrap();
    let first = lease_granted_once(data.path()).await;
    let clean = first.kill_and_read_stderr();
    assert!(!clean.contains("recovery cut"), "{clean}");

    let state = data.path().join(STATE_FILE);
    let mut bytes = std::fs::read(&state).unwrap();
    bytes.extend_from_slice(&TORN_APPEND);
    std::fs::write(&state, &bytes).unwrap();

    let second = ServiceProcess::start("lease", data.path());
    let stderr = second.kill_and_read_stderr();
    assert!(
        stderr.contains("recovery cut 10 bytes from the end of `lease-state.log`"),
        "{stderr}"
    );
    assert!(stderr.contains("WARN"), "{stderr}");
}

/// Serves leases on `data` and has owner `a` acquire `s1` there (token 1); the service is left
/// running.
async fn lease_granted_once(data: &Path) -> ServiceProcess {
    let first = ServiceProcess::start("lease", data);
    let s1 = SessionId::new("s1").unwrap();
    let lease = lease_driver(&first).acquire(&s1, &Owner::new("a", 0)).await;
    assert_eq!(lease.unwrap().token(), 1);
    first
}

fn lease_driver(process: &ServiceProcess) -> RemoteLease {
    let clock = Arc::new(RealClock::new());
    RemoteChannel::new(&process.addr, tcp_dialer(), clock, &ClientConfig::default())
        .map(RemoteLease::new)
        .unwrap()
}

/// Runs `leasesim ARGS`, which must exit 2 within 30 s (it is killed and reaped otherwise);
/// returns its stderr.
// A child process runs in real time: the deadline and the polling are real time too.
#[allow(clippy::disallowed_types, clippy::disallowed_methods)]
fn refused_within_30s(args: &[&str]) -> String {
    let mut child = leasesim!()
        .command()
        .args(args)
        .env_remove("RUST_LOG")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if std::time::Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{args:?} did not exit within 30 s: it started instead of refusing");
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    };
    let mut stderr = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut stderr)
        .unwrap();
    assert_eq!(status.code(), Some(2), "{args:?} should exit 2: {stderr}");
    stderr
}

/// A bit flipped in the last, acknowledged frame of `lease-state.log` looks like a torn
/// write, but the checkpoint knows it was acknowledged: the service refuses to start (exit 2)
/// instead of reissuing the token, naming the file and both positions.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_damaged_acknowledged_last_frame_or_a_truncated_state_file_exits_2() {
    let data = tempfile::tempdir().unwrap();
    let first = lease_granted_once(data.path()).await;
    drop(first);

    let state = data.path().join(STATE_FILE);
    let good = std::fs::read(&state).unwrap();
    let dir = data.path().to_str().unwrap();
    let mut rotted = good.clone();
    *rotted.last_mut().unwrap() ^= 0x01;
    for damaged in [rotted, good[..good.len() / 2].to_vec(), Vec::new()] {
        std::fs::write(&state, &damaged).unwrap();
        let stderr = refused_within_30s(&serve_args("lease", dir, &[]));
        assert!(stderr.contains("log `lease-state.log` ends at"), "{stderr}");
        assert!(stderr.contains("acknowledged up to frame seq"), "{stderr}");
        assert!(stderr.contains("lease-state-checkpoint.log"), "{stderr}");
        assert_eq!(std::fs::read(&state).unwrap(), damaged, "left as it is");
    }
}

/// The ledger service refuses a ledger file replaced by a directory (exit 2, naming it), and
/// one cut to its header.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_ledger_file_replaced_by_a_directory_or_cut_exits_2() {
    let data = tempfile::tempdir().unwrap();
    let s1 = SessionId::new("s1").unwrap();
    acknowledge_events(data.path(), &s1, 3).await;
    let file = data
        .path()
        .join(leasesim::storage::safe_name("s1", ".ledger"));
    let good = std::fs::read(&file).unwrap();
    let dir = data.path().to_str().unwrap();

    std::fs::write(&file, &good[..good.len() - 1]).unwrap();
    let stderr = refused_within_30s(&serve_args("ledger", dir, &[]));
    assert!(
        stderr.contains("acknowledged up to frame seq 3"),
        "{stderr}"
    );
    assert!(stderr.contains("ends at frame seq 2"), "{stderr}");

    std::fs::remove_file(&file).unwrap();
    std::fs::create_dir(&file).unwrap();
    let stderr = refused_within_30s(&serve_args("ledger", dir, &[]));
    assert!(stderr.contains(&file.display().to_string()), "{stderr}");
    assert!(stderr.contains("not a regular file"), "{stderr}");

    std::fs::remove_dir(&file).unwrap();
    std::fs::write(&file, &good).unwrap();
    let restored = LedgerProcess::start(data.path());
    assert_eq!(restored.client.tip(&s1).await, Ok(3));
}

/// A FIFO where a service expects its state, checkpoint or ledger file is refused at once,
/// exit 2 naming the file and what it is, instead of blocking in `open()` for ever, deaf to
/// SIGTERM (reliability probe, N3).
#[test]
fn a_fifo_as_a_state_or_checkpoint_file_exits_2_instead_of_hanging() {
    for (service, file) in [
        ("lease", STATE_FILE),
        ("lease", "lease-state-checkpoint.log"),
        ("ledger", "ledger-checkpoint.log"),
    ] {
        let data = tempfile::tempdir().unwrap();
        let fifo = data.path().join(file);
        let made = Command::new("mkfifo").arg(&fifo).status().unwrap();
        assert!(made.success());
        let stderr = refused_within_30s(&serve_args(service, data.path().to_str().unwrap(), &[]));
        assert!(
            stderr.contains(&fifo.display().to_string()),
            "{file}: {stderr}"
        );
        assert!(
            stderr.contains("a FIFO, not a regular file"),
            "{file}: {stderr}"
        );
    }
}

/// SIGTERM and SIGINT stop a serving service cleanly (exit 0) within
/// [`leasesim::cli::serve::STOP_BOUND`].
// A child process runs in real time: the deadline and the polling are real time too.
#[allow(clippy::disallowed_types, clippy::disallowed_methods)]
#[test]
fn sigterm_and_sigint_stop_a_service_within_the_bound() {
    for (service, signal) in [("lease", libc::SIGTERM), ("ledger", libc::SIGINT)] {
        let data = tempfile::tempdir().unwrap();
        let mut process = ServiceProcess::start(service, data.path());
        let pid = i32::try_from(process.child.id()).unwrap();
        // SAFETY: kill(2) on our own child's pid, which has not been reaped yet.
        assert_eq!(unsafe { libc::kill(pid, signal) }, 0);
        let deadline = std::time::Instant::now() + leasesim::cli::serve::STOP_BOUND;
        let status = loop {
            if let Some(status) = process.child.try_wait().unwrap() {
                break status;
            }
            assert!(
                std::time::Instant::now() < deadline,
                "{service} ignored signal {signal}"
            );
            std::thread::sleep(std::time::Duration::from_millis(20));
        };
        assert_eq!(status.code(), Some(0), "{service}: {status}");
    }
}
