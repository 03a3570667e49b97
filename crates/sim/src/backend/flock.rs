//! `FlockLease` in the world (docs/world.md#flock-in-the-world): the replicas are processes of
//! one modelled host (the backend's host, `lease`) sharing its lease directory, judged on that
//! host's clock as `CLOCK_BOOTTIME`. The same `FlockLease` code as on real `flock(2)` runs on
//! the model of open file descriptions ([`leasesim_flock::model`]); each replica boot is a new
//! process, a replica crash kills it (its descriptions are closed, no unlock runs), and a
//! replica can `fork` ([`ForkMode`]): the child shares the parent's descriptions.
//!
//! Every call is a decision on the host and is recorded as one (`decision` lines on the
//! host's clock); a forked child's release is a decision too.

use std::any::Any;
use std::collections::BTreeMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex, Weak};

use async_trait::async_trait;

use super::{
    AuthorityHost, AuthorityKind, BackendView, HostResult, RecordableAuthority, RecordingAuthority,
    ReplicaEnv, WorldBackend,
};
use crate::record::Recorder;
use crate::script::ForkMode;
use leasesim_core::clock::Clock;
use leasesim_core::lease::{Lease, LeaseError, Owner, SessionId, SessionLease};
use leasesim_flock::model::{Host, Process};
use leasesim_flock::{FlockLease, FlockLeaseConfig};
use leasesim_history::hosts;

/// The lease directory of the modelled host (a path only: the model has no real files).
pub const FLOCK_DIR: &str = "/var/lib/leasesim/leases";

/// `FlockLease` over the modelled host `lease`: no server, the replicas' processes decide on
/// the shared directory themselves. No record deletion, no restart of the host (its page
/// cache is not modelled), no error windows; drift and freezes as any backend on the world's
/// clocks.
#[derive(Clone, Copy, Debug, Default)]
pub struct Flock;

impl WorldBackend for Flock {
    fn name(&self) -> &str {
        "flock"
    }

    fn view(&self) -> BackendView {
        BackendView {
            host: hosts::LEASE.to_owned(),
            authority: AuthorityKind::Decides,
            record_deletion: false,
            restarts: false,
            error_windows: false,
            drift: true,
            freezes: true,
            own_thread: false,
        }
    }

    fn forks(&self) -> bool {
        true
    }

    fn serve(&self, _host: AuthorityHost) -> Pin<Box<dyn Future<Output = HostResult>>> {
        // The host runs no server: its processes are the replicas.
        Box::pin(std::future::pending())
    }

    fn client(
        &self,
        replica: &ReplicaEnv,
    ) -> Result<Arc<dyn SessionLease>, Box<dyn std::error::Error>> {
        let host = replica.flock.clone();
        let process = host.spawn();
        let config = FlockLeaseConfig {
            mutant: replica.mutant(),
            ..FlockLeaseConfig::new(FLOCK_DIR, replica.ttl())
        };
        let lease = FlockLease::on(process.clone(), config)?;
        let client = Arc::new(FlockProcess {
            me: Arc::new(Sharer { process, lease }),
            last: Mutex::new(BTreeMap::new()),
            recorder: replica.recorder.clone(),
            clock: host.clock(),
            forks: replica.forks.clone(),
        });
        let forks: Arc<dyn Forks> = client.clone();
        replica.forks.register(Arc::downgrade(&forks));
        Ok(client)
    }
}

/// One process's `FlockLease`: what its decisions are recorded through.
#[derive(Debug)]
struct Sharer {
    process: Arc<Process>,
    lease: FlockLease,
}

#[async_trait]
impl SessionLease for Sharer {
    async fn acquire(&self, session: &SessionId, owner: &Owner) -> Result<Lease, LeaseError> {
        self.lease.acquire(session, owner).await
    }

    async fn renew(&self, lease: &Lease) -> Result<Lease, LeaseError> {
        self.lease.renew(lease).await
    }

    async fn release(&self, lease: &Lease) -> Result<(), LeaseError> {
        self.lease.release(lease).await
    }
}

impl RecordableAuthority for Sharer {
    /// The hold a release by this process would end: the record's holder when this process
    /// is it (a forked child's release of its parent's hold ends nothing).
    fn holder(&self, session: &SessionId) -> Option<(Owner, u64)> {
        self.lease.own_hold(session)
    }
}

/// A replica's process on the modelled host, its decisions recorded on the host's clock.
/// Dropped (the replica crashed or the run ended): the process is killed, its descriptions
/// closed without an unlock.
#[derive(Debug)]
struct FlockProcess {
    me: Arc<Sharer>,
    /// The last lease value granted per session (what a forked child inherits).
    last: Mutex<BTreeMap<SessionId, Lease>>,
    recorder: Recorder,
    clock: Arc<dyn Clock>,
    forks: ForkSlot,
}

impl FlockProcess {
    fn recording(&self, sharer: Arc<Sharer>) -> RecordingAuthority {
        RecordingAuthority::new(sharer, self.recorder.clone(), self.clock.clone())
    }

    fn keep(&self, result: &Result<Lease, LeaseError>) {
        if let Ok(lease) = result {
            let mut last = self.last.lock().unwrap_or_else(|p| p.into_inner());
            last.insert(lease.session().clone(), lease.clone());
        }
    }

    fn inherited(&self) -> Vec<Lease> {
        let last = self.last.lock().unwrap_or_else(|p| p.into_inner());
        last.values().cloned().collect()
    }
}

impl Drop for FlockProcess {
    fn drop(&mut self) {
        self.me.process.exit();
    }
}

#[async_trait]
impl SessionLease for FlockProcess {
    async fn acquire(&self, session: &SessionId, owner: &Owner) -> Result<Lease, LeaseError> {
        let result = self
            .recording(self.me.clone())
            .acquire(session, owner)
            .await;
        self.keep(&result);
        result
    }

    async fn renew(&self, lease: &Lease) -> Result<Lease, LeaseError> {
        let result = self.recording(self.me.clone()).renew(lease).await;
        self.keep(&result);
        result
    }

    async fn release(&self, lease: &Lease) -> Result<(), LeaseError> {
        self.recording(self.me.clone()).release(lease).await
    }
}

#[async_trait]
impl Forks for FlockProcess {
    async fn fork(&self, mode: ForkMode) {
        let process = self.me.process.fork();
        let lease = match self.me.lease.forked(process.clone()) {
            Ok(lease) => lease,
            Err(error) => {
                tracing::warn!(target: "leasesim::sim::flock", %error, "fork");
                process.exit();
                return;
            }
        };
        let child = Arc::new(Sharer { process, lease });
        tracing::info!(target: "leasesim::sim::flock", pid = child.process.id(), mode = mode.name(), "forked");
        match mode {
            ForkMode::Linger => self.forks.keep(Box::new(child)),
            ForkMode::Exit => {
                let recording = self.recording(child.clone());
                for lease in self.inherited() {
                    let _ = recording.release(&lease).await;
                }
                drop(recording);
                // A careless child: it drops what it has (its `FlockLease` closes its
                // copies) while alive, then exits.
                let process = child.process.clone();
                drop(child);
                process.exit();
            }
        }
    }
}

/// What a replica's process can do besides lease calls.
#[async_trait]
pub trait Forks: Send + Sync {
    /// `fork(2)`: the child ends as `mode` says.
    async fn fork(&self, mode: ForkMode);
}

/// Where a replica's lease client registers its [`Forks`] at each boot, for the script's
/// `fork` calls and the nemesis's `fork` faults; it also keeps the replica's lingering
/// children alive until the run ends (a child outlives its parent's crash). Cloning gives
/// another handle to the same slot.
#[derive(Clone, Default)]
pub struct ForkSlot(Arc<Mutex<ForkState>>);

#[derive(Default)]
struct ForkState {
    current: Option<Weak<dyn Forks>>,
    lingering: Vec<Box<dyn Any + Send + Sync>>,
}

impl std::fmt::Debug for ForkSlot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let state = self.state();
        write!(f, "ForkSlot({} lingering)", state.lingering.len())
    }
}

impl ForkSlot {
    fn state(&self) -> std::sync::MutexGuard<'_, ForkState> {
        self.0.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The running process's forks (replaced at each boot).
    pub fn register(&self, forks: Weak<dyn Forks>) {
        self.state().current = Some(forks);
    }

    /// Keeps `child` alive until the run ends.
    pub fn keep(&self, child: Box<dyn Any + Send + Sync>) {
        self.state().lingering.push(child);
    }

    /// Forks the running process; `false` when none runs or its backend cannot fork.
    pub async fn fork(&self, mode: ForkMode) -> bool {
        let current = self.state().current.as_ref().and_then(Weak::upgrade);
        match current {
            Some(forks) => {
                forks.fork(mode).await;
                true
            }
            None => false,
        }
    }
}

/// The modelled host of a world: a fresh [`Host`] on `clock` (the backend host's).
pub(crate) fn model_host(clock: Arc<dyn Clock>) -> Host {
    Host::new(clock)
}
