//! kube-lease-manager 0.13.1, unmodified, as a world backend named
//! `target:kube-lease-manager` (docs/targets.md#kube-lease-manager): the authority is the
//! simulated API server exactly as the `kube` backend serves it, and each replica drives the
//! crate's `LeaseManager` through its public API only ([`ManagedLease`]). Only a binary that
//! links the interposer may run it (`leasesim-targets`): the crate reads the wall clock and
//! draws randomness itself.

mod lease;
mod params;
mod signal;

use std::sync::Arc;
use std::time::Duration;

use leasesim::lease::SessionLease;
use leasesim::lease::client_over;
use leasesim::sim::backend::{
    APISERVER_PORT, LeaseObjectTarget, NAMESPACE, OnApiServer, RecordedKubeCalls, ReplicaEnv,
    SignalLease,
};

pub use lease::{LeaseManagers, ManagedLease};
pub use params::Params;

/// The backend's name in run files and scenarios (`[world] backend`).
pub const NAME: &str = "target:kube-lease-manager";

/// The kube-lease-manager target: a [`ManagedLease`] on each replica, on the simulated API
/// server. Its TTL must be whole seconds, at least 3 ([`Params`]).
#[derive(Clone, Copy, Debug, Default)]
pub struct KubeLeaseManager;

impl KubeLeaseManager {
    /// The target as a world backend: on the simulated API server ([`OnApiServer`]).
    pub fn backend() -> leasesim::sim::backend::Backend {
        leasesim::sim::backend::Backend::new(OnApiServer(KubeLeaseManager))
    }
}

impl LeaseObjectTarget for KubeLeaseManager {
    fn name(&self) -> &'static str {
        NAME
    }

    fn check_ttl(&self, ttl: Duration) -> Result<(), String> {
        Params::for_ttl(ttl).map(|_| ())
    }

    fn client(
        &self,
        replica: &ReplicaEnv,
        calls: Arc<RecordedKubeCalls>,
    ) -> Result<Arc<dyn SessionLease>, Box<dyn std::error::Error>> {
        let params = Params::for_ttl(replica.ttl())?;
        let config = replica.client_config();
        let client = client_over(
            replica.dialer(),
            &replica.authority_addr(APISERVER_PORT),
            NAMESPACE,
            config.call_timeout,
        );
        let managers =
            LeaseManagers::new(client, calls, replica.clock(), params, config.call_timeout);
        Ok(Arc::new(SignalLease::new(
            managers,
            replica.clock(),
            replica.ttl(),
        )))
    }
}
