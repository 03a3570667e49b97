//! Lease backends the world can host (docs/backends.md): a backend puts its server on the
//! authority host and gives each replica a [`SessionLease`] client that talks to it over the
//! world's transport, on the replica's own clock. The gRPC [`Grpc`] services are the default;
//! [`Kube`] serves Kubernetes Lease objects from the simulated API server
//! ([`super::apiserver`]) to `KubeLease` clients;
//! a user's backend implements [`WorldBackend`] and plugs in with
//! `World::builder().backend(Backend::new(MyBackend))` without touching `src/`
//! (`tests/world/backend.rs` does exactly that).
//!
//! A backend also says how the checkers see it ([`BackendView`]): whether an authority on its
//! host decides expiry on its own clock — then every decision becomes a `decision` line
//! through [`AuthorityHost::record`] — or whether it has no authority clock (a Kubernetes API
//! server): then no decision is recorded; EXCL is judged on the holders' validity windows,
//! and a backend that records its accepted writes (the API server's `write` lines, through
//! [`AuthorityHost::write_sink`]) has TOKEN and EXPIRY judged on them — without them those
//! report "not judged"; the holders' operations, the journal and the ledger are judged as for
//! any backend (FENCE, LEDGER, STOP, LIVE, LIN-LEASE, LIN-LEDGER); and which faults reach into
//! it (record deletion, restarts). A backend that is not built in runs from Rust only: run files,
//! `leasesim replay`, shrinking and campaigns name the built-in backends
//! ([`super::runfile::BackendSpec`]).

mod flock;
mod kube;
mod on_apiserver;
mod signal_lease;
mod target;

pub(crate) use flock::model_host as flock_model_host;
pub use flock::{FLOCK_DIR, Flock, ForkSlot, Forks};
pub use kube::{APISERVER_PORT, Kube, NAMESPACE, RecordedKubeCalls, check_whole_seconds};
pub use on_apiserver::{LeaseObjectTarget, OnApiServer, renew_period};
pub use signal_lease::{Ended, Seen, SignalCrate, SignalLease};
pub use target::{TARGET_PREFIX, TARGETS_BINARY, register_targets, target_backend};

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;

use super::apiserver::{AcceptedWrite, WriteSink};
use super::clock::HostClock;
use super::errors::ErrorWindows;
use super::net::HostConns;
use super::record::Recorder;
use super::to_history::ToHistory;
use leasesim_core::clock::{Clock, Instant};
use leasesim_core::hooks::HookSlot;
use leasesim_core::lease::{Lease, LeaseError, MemLease, Owner, SessionId, SessionLease};
use leasesim_core::mutant::Mutant;
use leasesim_core::storage::MemStorage;
use leasesim_history::{Decision, DecisionLine, Refusal, Request, WriteLine, hosts, micros};
use leasesim_net::{Dialer, Incoming};
use leasesim_remote::lease::{DurableLease, DurableLeaseConfig, LeaseServer, RemoteLease};
use leasesim_remote::{ClientConfig, RemoteChannel};

/// What a host's future returns (turmoil's host result).
pub type HostResult = Result<(), Box<dyn std::error::Error>>;

/// A lease backend the world can host.
///
/// [`WorldBackend::serve`] runs inside the authority host at every boot (a crash drops it, a
/// restart calls it again with the same durable disk); [`WorldBackend::client`] runs inside
/// each replica host at every boot. Both must do all their I/O through the transport and the
/// clock they are given, so a run stays deterministic.
pub trait WorldBackend: Send + Sync + fmt::Debug + 'static {
    /// The backend's name in run files, banners and reports (e.g. `grpc`).
    fn name(&self) -> &str;

    /// How the checkers see this backend and which faults it supports.
    fn view(&self) -> BackendView;

    /// Refuses a TTL this backend cannot grant (e.g. the kube backend's whole seconds);
    /// every TTL is fine by default. Called when the world is built.
    ///
    /// # Errors
    /// A message naming the TTL and what is accepted.
    fn check_ttl(&self, ttl: Duration) -> Result<(), String> {
        let _ = ttl;
        Ok(())
    }

    /// Serves the backend on its authority host until the host crashes.
    fn serve(&self, host: AuthorityHost) -> Pin<Box<dyn Future<Output = HostResult>>>;

    /// The lease client of one replica.
    ///
    /// # Errors
    /// When the client cannot be built (e.g. a malformed address); the replica's host fails.
    fn client(
        &self,
        replica: &ReplicaEnv,
    ) -> Result<Arc<dyn SessionLease>, Box<dyn std::error::Error>>;
}

/// How the checkers see a backend, and the faults that reach into it.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct BackendView {
    /// The host the backend's server runs on (a world host name, e.g. `lease`); faults name
    /// it, and its clock segments are in the history.
    pub host: String,
    /// Whether an authority on `host` decides expiry on its own clock.
    pub authority: AuthorityKind,
    /// Whether the nemesis can delete an expired lease record (`delete_lease_record`); the
    /// backend's server must then hand it the means with [`AuthorityHost::expose_faults`] at
    /// every boot (until it does, a deletion does nothing).
    pub record_deletion: bool,
    /// Whether the host may crash and restart (`crash`/`restart` of `host`,
    /// `lease_service_restarts`).
    pub restarts: bool,
    /// Whether the backend's server answers the nemesis's error windows
    /// (`authority_errors`): it must consult [`AuthorityHost::error_windows`] with each
    /// request's caller ([`leasesim_net::Conn::peer`]).
    pub error_windows: bool,
    /// Whether a host's timers follow its clock's drift (`clock_drift`): true for code that
    /// sleeps on the host's [`Clock`]; false for code the world hosts unmodified, which sleeps
    /// on tokio's timers, and they run on true time (docs/targets.md#what-a-target-world-refuses).
    pub drift: bool,
    /// Whether a freeze can stop the code on the hosts (`pause`, `suspend`, `stall`): true for
    /// code that passes the world's gates (its [`Clock`] timers and pause points); false for
    /// code the world hosts unmodified, which passes none.
    pub freezes: bool,
    /// Whether the world runs on a thread of its own ([`crate::world::World::run`]):
    /// code the world hosts unmodified keeps per-thread state seeded through the hooks
    /// (rand's thread RNG, fastrand, std's `RandomState` keys), which a second world on that
    /// thread would inherit (docs/targets.md#the-worlds-side).
    pub own_thread: bool,
    /// Whether its replicas are processes of one host that can `fork` (script `fork` calls,
    /// the nemesis's `fork` faults; docs/world.md#flock-in-the-world).
    pub forks: bool,
}

impl BackendView {
    /// The host whose decisions the history's `decision` lines are, if there is one.
    pub fn decisions_host(&self) -> Option<&str> {
        match self.authority {
            AuthorityKind::Decides => Some(&self.host),
            AuthorityKind::Holders => None,
        }
    }
}

/// Who decides expiry.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum AuthorityKind {
    /// An authority judges expiry on its own monotonic clock and records every decision
    /// through [`AuthorityHost::record`] (TOKEN, EXCL, EXPIRY and LIN-LEASE judge them).
    Decides,
    /// No authority clock (e.g. a Kubernetes API server, whose holders judge expiry by
    /// observation): no decision is recorded on the host; EXCL is judged on the holders, and
    /// TOKEN and EXPIRY on the host's `write` lines if it records them (else "not judged";
    /// docs/checks.md#excl).
    Holders,
}

/// A backend as the world holds it: shared, compared and printed by its name (two backends
/// with one name are one backend to the world: give each its own).
#[derive(Clone)]
pub struct Backend(Arc<dyn WorldBackend>);

impl Backend {
    /// Wraps a backend.
    pub fn new(backend: impl WorldBackend) -> Self {
        Backend(Arc::new(backend))
    }

    /// The backend's name.
    pub fn name(&self) -> &str {
        self.0.name()
    }

    /// How the checkers see it.
    pub fn view(&self) -> BackendView {
        self.0.view()
    }

    /// Whether its replicas can fork ([`BackendView::forks`]).
    pub fn forks(&self) -> bool {
        self.view().forks
    }

    pub(crate) fn inner(&self) -> &Arc<dyn WorldBackend> {
        &self.0
    }
}

impl Default for Backend {
    /// The gRPC lease service ([`Grpc`]).
    fn default() -> Self {
        Backend::new(Grpc)
    }
}

impl PartialEq for Backend {
    fn eq(&self, other: &Self) -> bool {
        self.name() == other.name()
    }
}

impl Eq for Backend {}

impl fmt::Debug for Backend {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Backend({})", self.name())
    }
}

/// An authority whose decisions the world can record: a [`SessionLease`] that can also say,
/// without yielding, who holds a session now (so a release records whether it ended the
/// caller's hold) and how much restart grace is left.
///
/// What the recording assumes: a call's decision is stamped when the call returns (on the
/// host's clock), so an authority must not wait on its host after deciding — a pause
/// between the two shows as a later decision; and [`RecordableAuthority::holder`], read just
/// before a release, is the record that release acts on (the release does not yield before
/// it acts), as [`DurableLease`] and [`MemLease`] guarantee.
pub trait RecordableAuthority: SessionLease {
    /// The owner and token of the session's current record, if any.
    fn holder(&self, session: &SessionId) -> Option<(Owner, u64)>;

    /// How much of the restart grace period is left (zero when there is none).
    fn grace_left(&self) -> Duration {
        Duration::ZERO
    }
}

impl RecordableAuthority for DurableLease {
    fn holder(&self, session: &SessionId) -> Option<(Owner, u64)> {
        DurableLease::holder(self, session)
    }

    fn grace_left(&self) -> Duration {
        DurableLease::grace_left(self)
    }
}

impl RecordableAuthority for MemLease {
    fn holder(&self, session: &SessionId) -> Option<(Owner, u64)> {
        MemLease::holder(self, session)
    }
}

/// The faults that reach into an authority's state; the nemesis calls them from outside
/// every host, with the authority's clock reading.
pub trait AuthorityFaults: Send + Sync {
    /// Deletes `session`'s record if it has expired at `now` (the authority's monotonic
    /// clock), as a garbage collector would; returns whether it did.
    fn delete_expired_record(&self, session: &SessionId, now: Instant) -> bool;
}

impl AuthorityFaults for DurableLease {
    fn delete_expired_record(&self, session: &SessionId, now: Instant) -> bool {
        self.collect_expired_record(session, now)
    }
}

impl AuthorityFaults for MemLease {
    fn delete_expired_record(&self, session: &SessionId, now: Instant) -> bool {
        self.collect_expired_record(session, now)
    }
}

/// Where the running authority registers its fault handle; cleared when its host crashes.
pub(crate) type FaultsSlot = Arc<Mutex<Option<Arc<dyn AuthorityFaults>>>>;

/// What a backend's server gets on its host, at each boot.
pub struct AuthorityHost {
    pub(crate) name: String,
    pub(crate) clock: HostClock,
    pub(crate) disk: MemStorage,
    pub(crate) hooks: HookSlot,
    pub(crate) ttl: Duration,
    pub(crate) mutant: Option<Mutant>,
    pub(crate) recorder: Recorder,
    pub(crate) faults: FaultsSlot,
    pub(crate) error_windows: ErrorWindows,
    pub(crate) conns: HostConns,
}

impl AuthorityHost {
    /// The host's name (the backend's [`BackendView::host`]).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The host's monotonic clock (drifts, suspends and restarts as the schedule says).
    pub fn clock(&self) -> Arc<dyn Clock> {
        Arc::new(self.clock.clone())
    }

    /// The host's disk: it survives a crash and loses the writes not synced before it.
    pub fn disk(&self) -> Arc<MemStorage> {
        Arc::new(self.disk.clone())
    }

    /// The host's hooks: pause points at each service handler freeze here.
    pub fn hooks(&self) -> HookSlot {
        self.hooks.clone()
    }

    /// The TTL the world's leases are granted with.
    pub fn ttl(&self) -> Duration {
        self.ttl
    }

    /// The planted bug of this world, if any.
    pub fn mutant(&self) -> Option<Mutant> {
        self.mutant
    }

    /// Listens on the host's simulated TCP `port`.
    ///
    /// # Errors
    /// When the host cannot bind it.
    pub async fn listen(&self, port: u16) -> std::io::Result<Incoming> {
        self.conns.incoming(&format!("0.0.0.0:{port}")).await
    }

    /// `authority`, recording each of its decisions as a history `decision` line stamped with
    /// this host's monotonic clock. Serve what this returns.
    pub fn record<A: RecordableAuthority + 'static>(
        &self,
        authority: Arc<A>,
    ) -> Arc<dyn SessionLease> {
        Arc::new(RecordingAuthority::new(
            authority,
            self.recorder.clone(),
            self.clock(),
        ))
    }

    /// The error windows the nemesis opens with `authority_errors` (kept across restarts):
    /// a backend whose [`BackendView::error_windows`] is true answers a request with the
    /// window's status ([`ErrorWindows::answer_for`] its caller) and applies nothing.
    pub fn error_windows(&self) -> ErrorWindows {
        self.error_windows.clone()
    }

    /// The recorder's sink for the accepted writes of an API server on this host: each
    /// becomes a history `write` line stamped with true time.
    pub fn write_sink(&self) -> WriteSink {
        let (recorder, host) = (self.recorder.clone(), self.name.clone());
        Arc::new(move |write: AcceptedWrite| {
            recorder.write(WriteLine {
                host: host.clone(),
                session: write.session,
                object: write.object,
                verb: write.verb,
                holder_identity: write.holder_identity,
                transitions: write.transitions,
                resource_version: write.resource_version,
                at_us: micros(recorder.now()),
            });
        })
    }

    /// Hands the nemesis the faults that reach into `authority` (for a backend whose
    /// [`BackendView::record_deletion`] is true).
    pub fn expose_faults(&self, authority: Arc<dyn AuthorityFaults>) {
        *self.faults.lock().unwrap_or_else(|p| p.into_inner()) = Some(authority);
    }
}

/// What a backend's client gets on a replica host.
pub struct ReplicaEnv {
    pub(crate) name: String,
    pub(crate) clock: HostClock,
    pub(crate) client: ClientConfig,
    pub(crate) authority_host: String,
    pub(crate) mutant: Option<Mutant>,
    pub(crate) ttl: Duration,
    pub(crate) recorder: Recorder,
    pub(crate) dialer: Dialer,
    pub(crate) hooks: HookSlot,
    pub(crate) flock: leasesim_flock::model::Host,
    pub(crate) forks: ForkSlot,
}

impl ReplicaEnv {
    /// The replica's hooks: a lease client that decides from a read freezes here at
    /// [`PausePoint::AfterAuthorityRead`](leasesim_core::hooks::PausePoint::AfterAuthorityRead)
    /// (docs/world.md#freezes-and-pause-points).
    pub fn hooks(&self) -> HookSlot {
        self.hooks.clone()
    }

    /// The replica's host name (`replica-N`).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The replica's monotonic clock: deadlines and backoff must use it.
    pub fn clock(&self) -> Arc<dyn Clock> {
        Arc::new(self.clock.clone())
    }

    /// Dials the world's simulated TCP (`host:port`), replies held as the schedule's
    /// `hold_replies` say.
    pub fn dialer(&self) -> Dialer {
        self.dialer.clone()
    }

    /// The world's client settings (call deadline, keepalive, reconnect backoff).
    pub fn client_config(&self) -> &ClientConfig {
        &self.client
    }

    /// `host:port` of the backend's host.
    pub fn authority_addr(&self, port: u16) -> String {
        format!("{}:{port}", self.authority_host)
    }

    /// The planted bug of this world, if any.
    pub fn mutant(&self) -> Option<Mutant> {
        self.mutant
    }

    /// The TTL the world's leases are granted with (a client that writes it, as
    /// `KubeLease` does, uses this one).
    pub fn ttl(&self) -> Duration {
        self.ttl
    }

    /// The backend host as the flock model sees it (its lease directory, open file
    /// descriptions and clock), one per world: every replica's process runs on it
    /// (docs/world.md#flock-in-the-world).
    pub fn flock_host(&self) -> &leasesim_flock::model::Host {
        &self.flock
    }

    /// Where this replica's process registers what it can do besides lease calls (`fork`).
    pub fn forks(&self) -> &ForkSlot {
        &self.forks
    }

    /// The run's history recorder: a backend outside `src/` records its client's calls with
    /// it (a target adapter: [`RecordedKubeCalls::for_target`]).
    pub fn recorder(&self) -> &Recorder {
        &self.recorder
    }
}

/// Port of the lease service on its host.
pub const LEASE_PORT: u16 = 7070;

/// The default backend: the durable lease authority ([`DurableLease`]) behind the gRPC lease
/// service on host `lease`, reached by [`RemoteLease`]. It records every decision, supports
/// record deletion and restarts (with its grace period).
#[derive(Clone, Copy, Debug, Default)]
pub struct Grpc;

impl WorldBackend for Grpc {
    fn name(&self) -> &str {
        "grpc"
    }

    fn view(&self) -> BackendView {
        BackendView {
            host: hosts::LEASE.to_owned(),
            authority: AuthorityKind::Decides,
            record_deletion: true,
            restarts: true,
            error_windows: true,
            drift: true,
            freezes: true,
            own_thread: false,
            forks: false,
        }
    }

    fn serve(&self, host: AuthorityHost) -> Pin<Box<dyn Future<Output = HostResult>>> {
        Box::pin(async move {
            let config = DurableLeaseConfig {
                mutant: host.mutant(),
                hooks: host.hooks(),
                ..DurableLeaseConfig::with_ttl(host.ttl())
            };
            let authority = Arc::new(DurableLease::open(host.disk(), host.clock(), config).await?);
            host.expose_faults(authority.clone());
            tokio::spawn({
                let authority = authority.clone();
                async move { authority.persist_grace().await }
            });
            let incoming = host.listen(LEASE_PORT).await?;
            let service = LeaseServer::new(host.record(authority))
                .with_hooks(host.hooks())
                .service();
            tonic::transport::Server::builder()
                .layer(tonic::service::InterceptorLayer::new(answer_error_windows(
                    host.error_windows(),
                )))
                .add_service(service)
                .serve_with_incoming(incoming)
                .await?;
            Ok(())
        })
    }

    fn client(
        &self,
        replica: &ReplicaEnv,
    ) -> Result<Arc<dyn SessionLease>, Box<dyn std::error::Error>> {
        Ok(Arc::new(
            RemoteChannel::new(
                &replica.authority_addr(LEASE_PORT),
                replica.dialer(),
                replica.clock(),
                replica.client_config(),
            )
            .map(RemoteLease::new)?,
        ))
    }
}

/// A gRPC interceptor answering the calls an error window covers with its status, before
/// the lease service sees them (nothing is applied, nothing is recorded as a decision).
fn answer_error_windows(
    windows: ErrorWindows,
) -> impl FnMut(tonic::Request<()>) -> Result<tonic::Request<()>, tonic::Status> + Clone {
    move |request: tonic::Request<()>| {
        let peer = request.extensions().get::<leasesim_net::Peer>();
        match windows.answer_for(peer.and_then(|p| p.host.as_deref())) {
            Some(status) => Err(tonic::Status::new(
                status.grpc_code(),
                format!("{status:?} (an authority_errors window)"),
            )),
            None => Ok(request),
        }
    }
}

/// A lease authority, recording each decision with its own monotonic reading and true time
/// from the recorder (made by [`super::backend::AuthorityHost::record`] in a simulation, by
/// `leasesim serve lease --history` live).
#[derive(Debug)]
pub struct RecordingAuthority {
    inner: Arc<dyn RecordableAuthority>,
    recorder: Recorder,
    clock: Arc<dyn Clock>,
}

impl RecordingAuthority {
    /// Records the decisions of `inner`, which judges time on `clock`.
    pub fn new(
        inner: Arc<dyn RecordableAuthority>,
        recorder: Recorder,
        clock: Arc<dyn Clock>,
    ) -> Self {
        RecordingAuthority {
            inner,
            recorder,
            clock,
        }
    }

    fn decide(&self, session: &SessionId, owner: &Owner, decision: Decision) {
        self.recorder.decision(DecisionLine {
            session: session.as_str().to_owned(),
            owner: owner.to_history(),
            decision,
            at_authority_us: micros(self.clock.now().since_origin()),
            at_us: micros(self.recorder.now()),
        });
    }

    fn granted(lease: &Lease, renew: bool) -> Decision {
        let (token, expiry_authority_us, ttl_us) = (
            lease.token(),
            micros(lease.expiry().since_origin()),
            micros(lease.ttl()),
        );
        if renew {
            Decision::Renew {
                token,
                expiry_authority_us,
                ttl_us,
            }
        } else {
            Decision::Grant {
                token,
                expiry_authority_us,
                ttl_us,
            }
        }
    }

    fn refused(&self, request: Request, token: Option<u64>, error: &LeaseError) -> Decision {
        let grace_left = self.inner.grace_left();
        let reason = match error {
            LeaseError::Held { holder_token } => Refusal::Held {
                holder_token: *holder_token,
            },
            LeaseError::Unavailable { .. } if !grace_left.is_zero() => Refusal::GracePeriod {
                remaining_authority_us: micros(grace_left),
            },
            other => Refusal::Unavailable {
                reason: other.to_string(),
            },
        };
        Decision::Refuse {
            request,
            token,
            reason,
        }
    }
}

#[async_trait]
impl SessionLease for RecordingAuthority {
    async fn acquire(&self, session: &SessionId, owner: &Owner) -> Result<Lease, LeaseError> {
        let result = self.inner.acquire(session, owner).await;
        let decision = match &result {
            Ok(lease) => Self::granted(lease, false),
            Err(error) => self.refused(Request::Acquire, None, error),
        };
        self.decide(session, owner, decision);
        result
    }

    async fn renew(&self, lease: &Lease) -> Result<Lease, LeaseError> {
        let result = self.inner.renew(lease).await;
        let decision = match &result {
            Ok(renewed) => Self::granted(renewed, true),
            Err(error) => self.refused(Request::Renew, Some(lease.token()), error),
        };
        self.decide(lease.session(), lease.owner(), decision);
        result
    }

    /// A release is recorded with whether it ended the caller's own current hold, read from
    /// the authority just before it runs (nothing can come between: the release does not
    /// yield before it acts).
    async fn release(&self, lease: &Lease) -> Result<(), LeaseError> {
        let ended = self
            .inner
            .holder(lease.session())
            .is_some_and(|(owner, token)| owner == *lease.owner() && token == lease.token());
        let result = self.inner.release(lease).await;
        let decision = match &result {
            Ok(()) => Decision::Release {
                token: lease.token(),
                ended,
            },
            Err(error) => self.refused(Request::Release, Some(lease.token()), error),
        };
        self.decide(lease.session(), lease.owner(), decision);
        result
    }
}
