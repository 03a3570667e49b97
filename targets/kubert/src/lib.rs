//! kubert 0.25 (its `lease` feature), unmodified, as a world backend named `target:kubert`
//! (docs/targets.md#kubert): the authority is the simulated API server exactly as the `kube`
//! backend serves it, and each replica drives the crate's `LeaseManager` through its public API
//! only ([`KubertLease`]), over a kube-client 1.1 client on the world's transport. Only a
//! binary that links the interposer may run it (`leasesim-targets`): the crate reads the wall
//! clock itself (chrono).

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
pub use lease::{KubertLease, KubertManagers};
pub use params::Params;

/// The backend's name in run files and scenarios (`[world] backend`).
pub const NAME: &str = "target:kubert";

/// The kubert target: a [`KubertLease`] on each replica, on the simulated API server. Its TTL
/// must be whole seconds ([`Params`]).
#[derive(Clone, Copy, Debug, Default)]
pub struct Kubert;

impl Kubert {
    /// The target as a world backend: on the simulated API server ([`OnApiServer`]).
    pub fn backend() -> leasesim::sim::backend::Backend {
        leasesim::sim::backend::Backend::new(OnApiServer(Kubert))
    }
}

impl LeaseObjectTarget for Kubert {
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
        let authority = replica.authority_addr(APISERVER_PORT);
        let crate_client =
            client_over(replica.dialer(), &authority, NAMESPACE, config.call_timeout)?;
        let client = leasesim::lease::client_over(
            replica.dialer(),
            &authority,
            NAMESPACE,
            config.call_timeout,
        );
        let managers = KubertManagers::new(crate_client, client, calls, params);
        Ok(Arc::new(SignalLease::new(
            managers,
            replica.clock(),
            replica.ttl(),
        )))
    }
}
