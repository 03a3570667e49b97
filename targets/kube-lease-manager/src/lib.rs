//! kube-lease-manager 0.13.1, unmodified, as a world backend named
//! `target:kube-lease-manager` (docs/targets.md#kube-lease-manager): the authority is the
//! simulated API server exactly as the `kube` backend serves it, and each replica drives the
//! crate's `LeaseManager` through its public API only ([`ManagedLease`]). Only a binary that
//! links the interposer may run it (`leasesim-targets`): the crate reads the wall clock and
//! draws randomness itself.

mod lease;
mod params;
mod signal;

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use leasesim::lease::{SessionLease, client_over};
use leasesim::sim::backend::{
    APISERVER_PORT, AuthorityHost, BackendView, HostResult, Kube, NAMESPACE, RecordedKubeCalls,
    ReplicaEnv, WorldBackend, check_whole_seconds,
};

pub use lease::ManagedLease;
pub use params::Params;

/// The backend's name in run files and scenarios (`[world] backend`).
pub const NAME: &str = "target:kube-lease-manager";

/// The kube-lease-manager target: [`Kube`]'s API server on host `apiserver`, a
/// [`ManagedLease`] on each replica. Its TTL must be whole seconds, at least 3 ([`Params`]).
#[derive(Clone, Copy, Debug, Default)]
pub struct KubeLeaseManager;

impl WorldBackend for KubeLeaseManager {
    fn name(&self) -> &str {
        NAME
    }

    /// [`Kube`]'s view, as code the world hosts unmodified sees it: its timers do not drift,
    /// no freeze reaches it, and the world runs on a thread of its own
    /// (docs/targets.md#what-a-target-world-refuses).
    fn view(&self) -> BackendView {
        BackendView {
            drift: false,
            freezes: false,
            own_thread: true,
            ..Kube.view()
        }
    }

    fn check_ttl(&self, ttl: Duration) -> Result<(), String> {
        check_whole_seconds(ttl)
            .and_then(|()| Params::for_ttl(ttl).map(|_| ()))
            .map_err(|error| format!("{NAME}: {error}"))
    }

    fn serve(&self, host: AuthorityHost) -> Pin<Box<dyn Future<Output = HostResult>>> {
        Kube.serve(host)
    }

    fn client(
        &self,
        replica: &ReplicaEnv,
    ) -> Result<Arc<dyn SessionLease>, Box<dyn std::error::Error>> {
        let params = Params::for_ttl(replica.ttl())?;
        let config = replica.client_config();
        let client = client_over(
            replica.dialer(),
            &replica.authority_addr(APISERVER_PORT),
            NAMESPACE,
            config.call_timeout,
        );
        let calls = RecordedKubeCalls::for_target(replica.recorder().clone(), replica.clock());
        Ok(Arc::new(ManagedLease::new(
            client,
            Arc::new(calls),
            replica.clock(),
            params,
            config.call_timeout,
        )))
    }
}
