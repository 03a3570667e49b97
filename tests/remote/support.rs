//! In-process servers on loopback TCP for the remote tests.

use std::future::Future;
use std::sync::Arc;

use leasesim::BoxFuture;
use leasesim::clock::Clock;
use leasesim::journal::{DurableLedger, LEDGER_SUFFIX, Ledger, LedgerServer, Record, RemoteLedger};
use leasesim::lease::{LeaseServer, Owner, RemoteLease, SessionLease};
use leasesim::net::{Incoming, tcp_dialer, tcp_incoming};
use leasesim::remote::{ClientConfig, RemoteChannel};
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

/// Starts `serve` on a free loopback port until the returned [`Served`] is dropped.
async fn serve_on_loopback<F, Fut>(serve: F) -> Served
where
    F: FnOnce(Incoming, BoxFuture<()>) -> Fut,
    Fut: Future<Output = Result<(), tonic::transport::Error>> + Send + 'static,
{
    let (addr, incoming) = tcp_incoming("127.0.0.1:0").await.unwrap();
    let (stop, stopped) = oneshot::channel::<()>();
    tokio::spawn(serve(
        incoming,
        Box::pin(async {
            let _ = stopped.await;
        }),
    ));
    Served {
        addr: addr.to_string(),
        _stop: stop,
    }
}

/// Serves `authority` on a free loopback port and returns a driver for it that backs off on
/// `clock`.
pub async fn lease_over_grpc(
    authority: Arc<dyn SessionLease>,
    clock: Arc<dyn Clock>,
) -> (RemoteLease, Served) {
    let served =
        serve_on_loopback(|incoming, stop| LeaseServer::new(authority).serve(incoming, stop)).await;
    let config = ClientConfig::default();
    let driver = RemoteChannel::new(&served.addr, tcp_dialer(), clock, &config)
        .map(RemoteLease::new)
        .unwrap();
    (driver, served)
}

/// Serves `ledger` on a free loopback port and returns a client for it.
pub async fn ledger_over_grpc(
    ledger: Arc<dyn Ledger>,
    clock: Arc<dyn Clock>,
) -> (RemoteLedger, Served) {
    let served =
        serve_on_loopback(|incoming, stop| LedgerServer::new(ledger).serve(incoming, stop)).await;
    let config = ClientConfig::default();
    let client = RemoteChannel::new(&served.addr, tcp_dialer(), clock, &config)
        .map(RemoteLedger::new)
        .unwrap();
    (client, served)
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
