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
use futures_util::FutureExt;
use tokio::sync::mpsc;

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
use leasesim_history::{Decision, Request, hosts, micros};

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
            forks: true,
        }
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

    /// The holder and token of `session`'s record when it is live on the host's clock and no
    /// process holds its generation lock.
    fn orphaned_hold(&self, session: &SessionId) -> Option<(Owner, u64)> {
        let (holder, token, expiry_us) = self.me.lease.recorded_holder(session)?;
        let now_us = micros(self.clock.now().since_origin());
        let generation = self.me.lease.files(session).generation(token);
        let free = !self.me.process.host().is_locked(&generation);
        (now_us < expiry_us && free).then_some((holder, token))
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
    /// Recorded as the authority's decisions are; a grant that takes over a live record
    /// whose generation lock no process holds any more (its holder's processes all died: the
    /// last close released the lock) is recorded after the end of that hold, a release by
    /// its holder at the same instant: flock ends a hold when its holder is gone
    /// (docs/backends.md#flocklease). Whether the lock was free is read from the model, not
    /// from the decision.
    async fn acquire(&self, session: &SessionId, owner: &Owner) -> Result<Lease, LeaseError> {
        let gone = self.orphaned_hold(session);
        let result = self.me.acquire(session, owner).await;
        let recording = self.recording(self.me.clone());
        if let (Ok(lease), Some((holder, token))) = (&result, gone)
            && token != lease.token()
        {
            let ended = Decision::Release { token, ended: true };
            recording.decide(session, &holder, ended);
        }
        let decision = match &result {
            Ok(lease) => RecordingAuthority::granted(lease, false),
            Err(error) => recording.refused(Request::Acquire, None, error),
        };
        recording.decide(session, owner, decision);
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

impl Forks for FlockProcess {
    fn fork(&self, mode: ForkMode) {
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
                    // A `FlockLease` call never yields (its file calls are synchronous): the
                    // release is done when first polled.
                    let released = recording.release(&lease).now_or_never();
                    debug_assert!(released.is_some(), "a flock release never yields");
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
pub trait Forks: Send + Sync {
    /// `fork(2)`: the child ends as `mode` says. Synchronous, as a fork is: the nemesis
    /// calls it from outside every host.
    fn fork(&self, mode: ForkMode);
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
    /// Forks asked from outside the replica's host (the nemesis), run by a task on it.
    requests: Option<mpsc::UnboundedSender<ForkMode>>,
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

    /// The running process's forks (replaced at each boot). Call it on the replica's host:
    /// it spawns there the task that runs the forks [`ForkSlot::request`] asks for (a fork
    /// reads the host's clocks, which only code on a host may).
    pub fn register(&self, forks: Weak<dyn Forks>) {
        let (sender, mut requests) = mpsc::unbounded_channel();
        let current = forks.clone();
        tokio::spawn(async move {
            while let Some(mode) = requests.recv().await {
                if let Some(forks) = current.upgrade() {
                    forks.fork(mode);
                }
            }
        });
        let mut state = self.state();
        state.current = Some(forks);
        state.requests = Some(sender);
    }

    /// Asks the running process to fork, from outside its host (the nemesis): it forks on
    /// its host as soon as its task runs; `false` when no process runs there (a crashed
    /// replica's task is gone).
    pub fn request(&self, mode: ForkMode) -> bool {
        let state = self.state();
        state
            .requests
            .as_ref()
            .is_some_and(|requests| requests.send(mode).is_ok())
    }

    /// Keeps `child` alive until the run ends.
    pub fn keep(&self, child: Box<dyn Any + Send + Sync>) {
        self.state().lingering.push(child);
    }

    /// Forks the running process; `false` when none runs or its backend cannot fork.
    pub fn fork(&self, mode: ForkMode) -> bool {
        let current = self.state().current.as_ref().and_then(Weak::upgrade);
        match current {
            Some(forks) => {
                forks.fork(mode);
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
