//! Lease test doubles: `MemLease` behind switches that count calls, hang renewals or refuse
//! to lease at all, and a small world of replicas sharing one authority and one ledger.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

use async_trait::async_trait;
use leasesim::clock::ManualClock;
use leasesim::journal::{MemLedger, Store};
use leasesim::lease::{Lease, LeaseError, MemLease, Owner, SessionId, SessionLease};
use leasesim::service::Service;

/// The TTL of every test world.
pub const TTL: Duration = Duration::from_secs(10);

/// `MemLease` with call counters and fault switches.
#[derive(Debug)]
pub struct ScriptedLease {
    /// The real authority behind the switches.
    pub inner: MemLease,
    /// Calls made so far, by kind.
    pub acquires: AtomicUsize,
    /// Renew calls made so far.
    pub renews: AtomicUsize,
    /// Release calls made so far.
    pub releases: AtomicUsize,
    /// When set, every renew hangs forever (a black-holed RPC).
    pub hang_renews: AtomicBool,
    /// When set, every acquire answers `Unsupported`.
    pub unsupported: AtomicBool,
}

impl ScriptedLease {
    fn new(clock: &ManualClock) -> Self {
        ScriptedLease {
            inner: MemLease::new(Arc::new(clock.clone()), TTL),
            acquires: AtomicUsize::new(0),
            renews: AtomicUsize::new(0),
            releases: AtomicUsize::new(0),
            hang_renews: AtomicBool::new(false),
            unsupported: AtomicBool::new(false),
        }
    }
}

#[async_trait]
impl SessionLease for ScriptedLease {
    async fn acquire(&self, session: &SessionId, owner: &Owner) -> Result<Lease, LeaseError> {
        self.acquires.fetch_add(1, Ordering::SeqCst);
        if self.unsupported.load(Ordering::SeqCst) {
            return Err(LeaseError::Unsupported);
        }
        self.inner.acquire(session, owner).await
    }

    async fn renew(&self, lease: &Lease) -> Result<Lease, LeaseError> {
        self.renews.fetch_add(1, Ordering::SeqCst);
        if self.hang_renews.load(Ordering::SeqCst) {
            std::future::pending::<()>().await;
        }
        self.inner.renew(lease).await
    }

    async fn release(&self, lease: &Lease) -> Result<(), LeaseError> {
        self.releases.fetch_add(1, Ordering::SeqCst);
        self.inner.release(lease).await
    }
}

/// One authority, one ledger, one clock, and as many replicas as a test asks for.
pub struct World {
    /// The clock every host reads (tests move it by hand).
    pub clock: ManualClock,
    /// The lease authority.
    pub authority: Arc<ScriptedLease>,
    /// The ledger.
    pub ledger: Arc<MemLedger>,
}

impl World {
    /// A world at time 0 with no leases and an empty ledger.
    pub fn new() -> Self {
        let clock = ManualClock::new();
        World {
            authority: Arc::new(ScriptedLease::new(&clock)),
            ledger: Arc::new(MemLedger::new()),
            clock,
        }
    }

    /// The store of incarnation 0 of `replica`.
    pub fn store(&self, replica: &str) -> Arc<Store> {
        Arc::new(Store::new(
            Owner::new(replica, 0),
            self.authority.clone(),
            self.ledger.clone(),
            Arc::new(self.clock.clone()),
        ))
    }

    /// A service for `replica` with the default configuration.
    pub fn replica(&self, replica: &str) -> Arc<Service> {
        Arc::new(Service::new(self.store(replica)))
    }

    /// Moves time by `d` and lets every woken task run.
    pub async fn advance(&self, d: Duration) {
        self.clock.advance(d);
        settle().await;
    }
}

/// The session every test uses.
pub fn s1() -> SessionId {
    SessionId::new("s1").unwrap()
}

/// Lets every runnable task of a current-thread runtime run until none is left to run.
///
/// Time does not move while settling (it is a `ManualClock`), so "none left" is reached.
pub async fn settle() {
    for _ in 0..64 {
        tokio::task::yield_now().await;
    }
}
