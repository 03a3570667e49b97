//! In-process servers on loopback TCP for the remote tests.

use std::sync::Arc;

use leasesim::clock::Clock;
use leasesim::journal::{Ledger, LedgerServer, RemoteLedger};
use leasesim::lease::{LeaseServer, RemoteLease, SessionLease};
use leasesim::net::{tcp_dialer, tcp_incoming};
use leasesim::remote::ClientConfig;
use tokio::sync::oneshot;

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
