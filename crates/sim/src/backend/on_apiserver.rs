//! A lease crate that leads on Kubernetes Lease objects, as a world backend
//! (docs/targets.md#a-target-on-the-api-server): every such target has the same authority —
//! the simulated API server, exactly as [`Kube`] serves it — and the same view of what faults
//! reach unmodified code; what differs is its name, the TTLs it can run and how one replica
//! drives the crate ([`LeaseObjectTarget`]). [`OnApiServer`] makes one a [`WorldBackend`].

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use super::{
    AuthorityHost, BackendView, HostResult, Kube, RecordedKubeCalls, ReplicaEnv, WorldBackend,
    check_whole_seconds,
};
use leasesim_core::lease::SessionLease;

/// What a target adapter on the API server supplies.
pub trait LeaseObjectTarget: Send + Sync + std::fmt::Debug + 'static {
    /// Its name in run files and scenarios: `target:<crate>`.
    fn name(&self) -> &'static str;

    /// Refuses a TTL the crate cannot run, beyond the whole seconds every Lease needs (checked
    /// first); every whole-second TTL is fine by default.
    ///
    /// # Errors
    /// A message naming the TTL and what is accepted.
    fn check_ttl(&self, ttl: Duration) -> Result<(), String> {
        let _ = ttl;
        Ok(())
    }

    /// One replica's lease, driving the crate through its public API over the replica's
    /// transport and clock; its adapter records its own calls and the crate's "I lead"
    /// signal into `calls` ([`RecordedKubeCalls::for_target`]).
    ///
    /// # Errors
    /// When the crate's client cannot be built; the replica's host fails.
    fn client(
        &self,
        replica: &ReplicaEnv,
        calls: Arc<RecordedKubeCalls>,
    ) -> Result<Arc<dyn SessionLease>, Box<dyn std::error::Error>>;
}

/// A [`LeaseObjectTarget`] as a world backend: [`Kube`]'s API server on host `apiserver`,
/// and [`Kube`]'s view as code the world hosts unmodified sees it — its timers do not drift,
/// no freeze reaches it, and the world runs on a thread of its own
/// (docs/targets.md#what-a-target-world-refuses).
#[derive(Clone, Copy, Debug, Default)]
pub struct OnApiServer<T>(pub T);

impl<T: LeaseObjectTarget> WorldBackend for OnApiServer<T> {
    fn name(&self) -> &str {
        self.0.name()
    }

    fn view(&self) -> BackendView {
        BackendView {
            drift: false,
            freezes: false,
            own_thread: true,
            forks: false,
            ..Kube.view()
        }
    }

    fn check_ttl(&self, ttl: Duration) -> Result<(), String> {
        check_whole_seconds(ttl)
            .and_then(|()| self.0.check_ttl(ttl))
            .map_err(|error| format!("{}: {error}", self.0.name()))
    }

    fn serve(&self, host: AuthorityHost) -> Pin<Box<dyn Future<Output = HostResult>>> {
        Kube.serve(host)
    }

    fn client(
        &self,
        replica: &ReplicaEnv,
    ) -> Result<Arc<dyn SessionLease>, Box<dyn std::error::Error>> {
        let calls = RecordedKubeCalls::for_target(replica.recorder().clone(), replica.clock());
        self.0.client(replica, Arc::new(calls))
    }
}

/// How often a target's crate renews its Lease for a world TTL of `ttl` (whole seconds,
/// [`check_whole_seconds`]): a third of it, as leasesim's renewer renews
/// (crates/core/src/service/renewer.rs), so a crate's holder and leasesim's own renew alike
/// (docs/targets.md#a-target-on-the-api-server).
pub fn renew_period(ttl: Duration) -> Duration {
    ttl / 3
}
