//! The same services and clients over turmoil's simulated TCP: a lease service host and a
//! ledger service host, a replica that takes a lease and writes a fenced journal, and a
//! partition that kills the replica's connection — the client must come back after the heal.

use std::sync::Arc;
use std::time::Duration;

use leasesim::clock::{Clock, RealClock};
use leasesim::journal::{LedgerServer, MemLedger, RemoteLedger, Store};
use leasesim::lease::{
    LeaseError, LeaseServer, MemLease, Owner, RemoteLease, SessionId, SessionLease,
};
use leasesim::remote::{ClientConfig, RemoteChannel};
use leasesim::sim::net::{turmoil_dialer, turmoil_incoming};

const TTL: Duration = Duration::from_secs(10);

fn sim() -> turmoil::Sim<'static> {
    turmoil::Builder::new()
        .rng_seed(7)
        .simulation_duration(Duration::from_secs(120))
        .build()
}

/// Inside turmoil, tokio's clock is the simulation's, so `RealClock` reads simulated time.
fn clock() -> Arc<dyn Clock> {
    Arc::new(RealClock::new())
}

fn host_services(sim: &mut turmoil::Sim<'static>) {
    sim.host("lease", || async {
        let authority = Arc::new(MemLease::new(clock(), TTL));
        let incoming = turmoil_incoming("0.0.0.0:7070").await?;
        LeaseServer::new(authority)
            .serve(incoming, std::future::pending())
            .await?;
        Ok(())
    });
    sim.host("ledger", || async {
        let incoming = turmoil_incoming("0.0.0.0:7071").await?;
        LedgerServer::new(Arc::new(MemLedger::new()))
            .serve(incoming, std::future::pending())
            .await?;
        Ok(())
    });
}

fn store(replica: &str) -> Store {
    let config = ClientConfig::default();
    let lease = RemoteChannel::new("lease:7070", turmoil_dialer(), clock(), &config)
        .map(RemoteLease::new)
        .unwrap();
    let ledger = RemoteChannel::new("ledger:7071", turmoil_dialer(), clock(), &config)
        .map(RemoteLedger::new)
        .unwrap();
    Store::new(
        Owner::new(replica, 0),
        Arc::new(lease),
        Arc::new(ledger),
        clock(),
    )
}

#[test]
fn a_replica_leases_and_writes_a_fenced_journal_over_simulated_tcp() {
    let mut sim = sim();
    host_services(&mut sim);
    sim.client("replica-1", async {
        let store = store("replica-1");
        let s1 = SessionId::new("s1").unwrap();
        let lease = store.acquire_lease(&s1).await?;
        let journal = store.open_journal(&lease).await?;
        assert_eq!(journal.append(b"e1".to_vec()).await?, 2);
        assert_eq!(journal.append(b"e2".to_vec()).await?, 3);
        lease.renew().await?;
        let events = store.replay(&s1).await?;
        assert_eq!(events.iter().map(|e| e.seq).collect::<Vec<_>>(), [2, 3]);
        Ok(())
    });
    sim.run().unwrap();
}

#[test]
fn a_client_comes_back_after_a_partition_heals() {
    let mut sim = sim();
    host_services(&mut sim);
    sim.client("replica-1", async {
        let config = ClientConfig::default();
        let driver = RemoteChannel::new("lease:7070", turmoil_dialer(), clock(), &config)
            .map(RemoteLease::new)
            .unwrap();
        let s1 = SessionId::new("s1").unwrap();
        let lease = driver.acquire(&s1, &Owner::new("replica-1", 0)).await?;

        turmoil::partition("replica-1", "lease");
        let cut_off = driver.renew(&lease).await;
        assert!(
            matches!(cut_off, Err(LeaseError::Unavailable { .. })),
            "renew across a partition: {cut_off:?}"
        );
        turmoil::repair("replica-1", "lease");

        let renewed = driver.renew(&lease).await?;
        assert_eq!(renewed.token(), lease.token());
        Ok(())
    });
    sim.run().unwrap();
}
