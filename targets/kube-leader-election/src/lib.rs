//! kube-leader-election 0.44, unmodified, as a world backend named
//! `target:kube-leader-election` (docs/targets.md#kube-leader-election): the authority is the
//! simulated API server exactly as the `kube` backend serves it, and each replica drives the
//! crate's `LeaseLock` through its public API only ([`ElectionLease`]), over a kube 4 client
//! on the world's transport. Only a binary that links the interposer may run it
//! (`leasesim-targets`): the crate reads the wall clock itself (jiff).

mod client;
mod lease;
mod params;
mod signal;

use std::sync::Arc;

use leasesim::lease::SessionLease;
use leasesim::sim::backend::{
    APISERVER_PORT, LeaseObjectTarget, NAMESPACE, OnApiServer, RecordedKubeCalls, ReplicaEnv,
    SignalLease,
};

pub use client::client_over;
pub use lease::{ElectionLease, LeaseLocks};
pub use params::Params;

/// The backend's name in run files and scenarios (`[world] backend`).
pub const NAME: &str = "target:kube-leader-election";

/// The kube-leader-election target: an [`ElectionLease`] on each replica, on the simulated
/// API server. Its TTL must be whole seconds ([`Params`]).
#[derive(Clone, Copy, Debug, Default)]
pub struct KubeLeaderElection;

impl KubeLeaderElection {
    /// The target as a world backend: on the simulated API server ([`OnApiServer`]).
    pub fn backend() -> leasesim::sim::backend::Backend {
        leasesim::sim::backend::Backend::new(OnApiServer(KubeLeaderElection))
    }
}

impl LeaseObjectTarget for KubeLeaderElection {
    fn name(&self) -> &'static str {
        NAME
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
        )?;
        let locks = LeaseLocks::new(client, calls, replica.clock(), params);
        Ok(Arc::new(SignalLease::new(
            locks,
            replica.clock(),
            replica.ttl(),
        )))
    }
}
