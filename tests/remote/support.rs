//! In-process servers on loopback TCP for the remote tests.

use std::sync::Arc;

use leasesim::clock::Clock;
use leasesim::journal::{DurableLedger, LEDGER_SUFFIX, Ledger, LedgerServer, Record, RemoteLedger};
use leasesim::lease::{LeaseServer, Owner, RemoteLease, SessionLease};
use leasesim::net::{tcp_dialer, tcp_incoming};
use leasesim::remote::ClientConfig;
use leasesim::storage::{MemStorage, Storage};
use tokio::sync::oneshot;

use crate::records::{self, s1};

/// A running server; dropping it stops the server.
#[derive(Debug)]
pub struct Served {
    /// `127.0.0.1:PORT`.
    pub addr: String,
    _stop: oneshot::Sender<()>,
}

/// Serves `authority` on a free loopback port and returns a driver for it that backs off on
/// `clock`.
pub async fn lease_over_grpc(
    authority: Arc<dyn SessionLease>,
    clock: Arc<dyn Clock>,
) -> (RemoteLease, Served) {
    let (addr, incoming) = tcp_incoming("127.0.0.1:0").await.unwrap();
    let (stop, stopped) = oneshot::channel::<()>();
    tokio::spawn(LeaseServer::new(authority).serve(incoming, async {
        let _ = stopped.await;
    }));
    let addr = addr.to_string();
    let driver = RemoteLease::new(&addr, tcp_dialer(), clock, &ClientConfig::default()).unwrap();
    (driver, Served { addr, _stop: stop })
}

/// Serves `ledger` on a free loopback port and returns a client for it.
pub async fn ledger_over_grpc(
    ledger: Arc<dyn Ledger>,
    clock: Arc<dyn Clock>,
) -> (RemoteLedger, Served) {
    let (addr, incoming) = tcp_incoming("127.0.0.1:0").await.unwrap();
    let (stop, stopped) = oneshot::channel::<()>();
    tokio::spawn(LedgerServer::new(ledger).serve(incoming, async {
        let _ = stopped.await;
    }));
    let addr = addr.to_string();
    let client = RemoteLedger::new(&addr, tcp_dialer(), clock, &ClientConfig::default()).unwrap();
    (client, Served { addr, _stop: stop })
}

/// The `n`th event of owner `a`'s first journal, payload `event N`.
pub fn event(n: u64) -> Record {
    records::event(Owner::new("a", 0), 1, n, &format!("event {n}"))
}

/// Appends events 1 to `count` for session s1 to a `DurableLedger` on `disk`, each
/// acknowledged at its position, and closes it; returns the name of s1's ledger file.
pub async fn acknowledged(disk: &MemStorage, count: u64) -> String {
    let ledger = DurableLedger::open(Arc::new(disk.clone())).await.unwrap();
    for n in 1..=count {
        assert_eq!(ledger.append(&s1(), n - 1, event(n)).await, Ok(n));
    }
    drop(ledger);
    let mut files = disk.list().await.unwrap();
    files.retain(|f| f.ends_with(LEDGER_SUFFIX));
    assert_eq!(files.len(), 1, "one session, one ledger file: {files:?}");
    files.pop().unwrap()
}
