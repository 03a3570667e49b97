//! The lease service across crashes: tokens are never reissued, grants are refused during
//! the restart grace period, and repeated restarts still let a new owner in after about one
//! TTL of accumulated uptime. Both services report the torn tail they cut at recovery.

use std::io::{BufRead, BufReader};
use std::process::{Child, Stdio};
use std::sync::Arc;
use std::time::Duration;

use leasesim::clock::{Clock, ManualClock, RealClock};
use leasesim::journal::{DurableLedger, Ledger};
use leasesim::lease::{
    DurableLease, DurableLeaseConfig, LeaseError, Owner, RemoteLease, STATE_FILE, SessionLease,
};
use leasesim::net::tcp_dialer;
use leasesim::remote::{ClientConfig, RemoteChannel};
use leasesim::storage::{MemStorage, Storage};
use leasesim_testkit::leasesim;

use crate::records::{self, s1};

/// `leasesim serve lease` as a child process, killed (SIGKILL) when dropped.
struct LeaseProcess {
    child: Child,
    addr: String,
}

impl LeaseProcess {
    fn start(data: &std::path::Path, ttl: &str) -> Self {
        let mut child = leasesim!()
            .command()
            .args(["serve", "lease", "--listen", "127.0.0.1:0", "--ttl", ttl])
            .args(["--grace-persist-interval", "100ms", "--data"])
            .arg(data)
            .stdout(Stdio::piped())
            .spawn()
            .expect("start leasesim serve lease");
        let mut line = String::new();
        let stdout = child.stdout.take().unwrap();
        BufReader::new(stdout).read_line(&mut line).unwrap();
        let addr = line
            .strip_prefix("lease service listening on ")
            .and_then(|rest| rest.split_whitespace().next())
            .unwrap_or_else(|| panic!("unexpected first line: {line:?}"))
            .to_owned();
        LeaseProcess { child, addr }
    }

    fn driver(&self) -> RemoteLease {
        let clock = Arc::new(RealClock::new());
        RemoteChannel::new(&self.addr, tcp_dialer(), clock, &ClientConfig::default())
            .map(RemoteLease::new)
            .unwrap()
    }
}

impl Drop for LeaseProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Real processes, so real time: the assertions compare instants on the test's own clock,
/// which can only make them stricter (A's lease is judged from before its request was sent).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[allow(clippy::disallowed_types, clippy::disallowed_methods)]
async fn a_killed_lease_service_restarts_without_reissuing_a_token_or_granting_in_its_grace() {
    const TTL: Duration = Duration::from_secs(2);
    let data = tempfile::tempdir().unwrap();
    let first = LeaseProcess::start(data.path(), "2s");
    let a_sent = std::time::Instant::now();
    let a = first
        .driver()
        .acquire(&s1(), &Owner::new("a", 0))
        .await
        .unwrap();
    assert_eq!(a.token(), 1);
    drop(first); // kill -9

    let second = LeaseProcess::start(data.path(), "2s");
    let b = second.driver();
    let refused = b.acquire(&s1(), &Owner::new("b", 0)).await;
    assert!(
        matches!(&refused, Err(LeaseError::Unavailable { reason }) if reason.contains("grace")),
        "granted during the grace period: {refused:?}"
    );
    let granted = loop {
        match b.acquire(&s1(), &Owner::new("b", 0)).await {
            Ok(lease) => break lease,
            Err(LeaseError::Unavailable { .. }) if a_sent.elapsed() < TTL * 3 => {
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            other => panic!("no grant within 3 TTLs of A's: {other:?}"),
        }
    };
    assert!(
        a_sent.elapsed() >= TTL,
        "B let in while A's lease could be live"
    );
    assert_eq!(granted.token(), 2, "token reissued after the restart");
}

/// Deterministic: the authority restarts every 3 s of uptime, losing its memory and
/// everything unsynced each time; B keeps asking every 100 ms.
#[tokio::test]
async fn repeated_restarts_let_a_new_owner_in_after_about_one_ttl_of_uptime() {
    const TTL: Duration = Duration::from_secs(10);
    const INTERVAL: Duration = Duration::from_secs(1);
    const STEP: Duration = Duration::from_millis(100);
    let storage = MemStorage::new();
    let clock = ManualClock::new();
    let start = |storage: &MemStorage| {
        let mut config = DurableLeaseConfig::with_ttl(TTL);
        config.grace_persist_interval = INTERVAL;
        let (storage, clock) = (Arc::new(storage.clone()), Arc::new(clock.clone()));
        async move {
            let authority = Arc::new(DurableLease::open(storage, clock, config).await.unwrap());
            let persist = tokio::spawn({
                let authority = authority.clone();
                async move { authority.persist_grace().await }
            });
            (authority, persist)
        }
    };
    let (mut authority, mut persist) = start(&storage).await;
    let a = authority.acquire(&s1(), &Owner::new("a", 0)).await.unwrap();
    let mut uptime = Duration::ZERO;
    let mut restarts = 0;
    let b = loop {
        clock.advance(STEP);
        uptime += STEP;
        settle().await;
        if uptime.as_millis().is_multiple_of(3_000) {
            persist.abort();
            storage.crash();
            (authority, persist) = start(&storage).await;
            restarts += 1;
        }
        match authority.acquire(&s1(), &Owner::new("b", 0)).await {
            Ok(lease) => break lease,
            Err(LeaseError::Unavailable { .. }) => assert!(uptime < TTL * 3, "never let in"),
            Err(LeaseError::Held { .. }) if restarts == 0 => {} // A holds it, as it should
            Err(other) => panic!("unexpected refusal: {other}"),
        }
    };
    assert!(
        uptime >= TTL,
        "B let in after {uptime:?}, while A's lease could be live"
    );
    assert!(
        uptime <= TTL + INTERVAL * restarts,
        "B let in only after {uptime:?} of uptime across {restarts} restarts"
    );
    assert_eq!(b.token(), a.token() + 1);
    assert!(
        restarts >= 3,
        "the test must restart the authority while A's lease is live"
    );
}

/// Lets the persist task run after the manual clock moved.
async fn settle() {
    for _ in 0..16 {
        tokio::task::yield_now().await;
    }
}

#[tokio::test]
async fn a_fresh_authority_has_no_grace_period() {
    let clock = Arc::new(ManualClock::new());
    let storage = Arc::new(MemStorage::new());
    let config = DurableLeaseConfig::with_ttl(Duration::from_secs(10));
    let authority = DurableLease::open(storage, clock.clone(), config)
        .await
        .unwrap();
    assert_eq!(authority.grace_until(), clock.now());
    let lease = authority.acquire(&s1(), &Owner::new("a", 0)).await.unwrap();
    assert_eq!(lease.token(), 1);
}

/// The conformance suite in real time against the real binary: each rule gets a fresh
/// `leasesim serve lease` process with a 2 s TTL (margins of half a second survive a loaded
/// CI machine), driven over loopback gRPC.
#[test]
#[ignore = "slow: every conformance rule in real time against its own served process (2 s TTLs, about 20 s); runs in .ci/run's slow step: cargo test --release -- --ignored"]
fn the_conformance_suite_passes_against_a_served_lease_service() {
    use leasesim::conformance::{RULES, Subject};
    const TTL: Duration = Duration::from_secs(2);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let mut broken = Vec::new();
    for rule in RULES {
        let data = tempfile::tempdir().unwrap();
        let served = LeaseProcess::start(data.path(), "2s");
        let outcome = runtime.block_on(async {
            let subject = Subject::with_real_time(Arc::new(served.driver()), TTL);
            (rule.run)(subject).await
        });
        if let Err(violation) = outcome {
            broken.push(violation.to_string());
        }
    }
    assert!(broken.is_empty(), "{broken:#?}");
}

/// Bytes of the tail of `file` that a crash tears: the first `KEPT_OF_TORN_FRAME` bytes of a
/// frame whose length field promises more. Appended unsynced, then torn by the crash.
async fn tear_an_append(storage: &MemStorage, file: &str) {
    let mut frame = 16u32.to_le_bytes().to_vec();
    frame.extend([0xa5; 4 + 16]);
    storage.append(file, &frame).await.unwrap();
    storage.crash_tearing(KEPT_OF_TORN_FRAME);
}

const KEPT_OF_TORN_FRAME: usize = 10;

#[tokio::test]
async fn a_torn_last_frame_of_the_lease_state_is_cut_and_reported() {
    const TTL: Duration = Duration::from_secs(10);
    let storage = MemStorage::new();
    let clock = ManualClock::new();
    let open = || {
        let (storage, clock) = (Arc::new(storage.clone()), Arc::new(clock.clone()));
        DurableLease::open(storage, clock, DurableLeaseConfig::with_ttl(TTL))
    };
    let authority = open().await.unwrap();
    assert_eq!(authority.recovered_cut_bytes(), 0, "a new file is intact");
    let a = authority.acquire(&s1(), &Owner::new("a", 0)).await.unwrap();
    drop(authority);
    tear_an_append(&storage, STATE_FILE).await;

    let authority = open().await.unwrap();
    assert_eq!(authority.recovered_cut_bytes(), KEPT_OF_TORN_FRAME as u64);
    clock.advance(TTL);
    let b = authority.acquire(&s1(), &Owner::new("b", 0)).await.unwrap();
    assert_eq!(
        b.token(),
        a.token() + 1,
        "the synced frames before the cut survive"
    );
    drop(authority);
    assert_eq!(
        open().await.unwrap().recovered_cut_bytes(),
        0,
        "cut durably"
    );
}

#[tokio::test]
async fn a_torn_last_frame_of_a_ledger_file_is_cut_and_reported() {
    let storage = MemStorage::new();
    let open = || DurableLedger::open(Arc::new(storage.clone()));
    let event = |n: u64| records::event(Owner::new("a", 0), 1, n, "\u{1}\u{1}\u{1}");
    let ledger = open().await.unwrap();
    assert_eq!(ledger.append(&s1(), 0, event(1)).await, Ok(1));
    assert_eq!(ledger.append(&s1(), 1, event(2)).await, Ok(2));
    drop(ledger);
    let mut files = storage.list().await.unwrap();
    files.retain(|f| f.ends_with(leasesim::journal::LEDGER_SUFFIX));
    assert_eq!(files.len(), 1, "{files:?}");
    tear_an_append(&storage, &files[0]).await;

    let ledger = open().await.unwrap();
    assert_eq!(ledger.recovered_cut_bytes(), KEPT_OF_TORN_FRAME as u64);
    assert_eq!(ledger.tip(&s1()).await, Ok(2));
    assert_eq!(ledger.append(&s1(), 2, event(3)).await, Ok(3));
    drop(ledger);
    assert_eq!(
        open().await.unwrap().recovered_cut_bytes(),
        0,
        "cut durably"
    );
}
