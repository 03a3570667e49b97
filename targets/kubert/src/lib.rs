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

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use leasesim::lease::SessionLease;
use leasesim::sim::backend::{
    APISERVER_PORT, AuthorityHost, BackendView, HostResult, Kube, NAMESPACE, RecordedKubeCalls,
    ReplicaEnv, WorldBackend, check_whole_seconds,
};

pub use client::client_over;
pub use lease::KubertLease;
pub use params::Params;

/// The backend's name in run files and scenarios (`[world] backend`).
pub const NAME: &str = "target:kubert";

/// The kubert target: [`Kube`]'s API server on host `apiserver`, a [`KubertLease`] on each
/// replica. Its TTL must be whole seconds ([`Params`]).
#[derive(Clone, Copy, Debug, Default)]
pub struct Kubert;

impl WorldBackend for Kubert {
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
        let authority = replica.authority_addr(APISERVER_PORT);
        let crate_client =
            client_over(replica.dialer(), &authority, NAMESPACE, config.call_timeout)?;
        let client = leasesim::lease::client_over(
            replica.dialer(),
            &authority,
            NAMESPACE,
            config.call_timeout,
        );
        let calls = RecordedKubeCalls::for_target(replica.recorder().clone(), replica.clock());
        Ok(Arc::new(KubertLease::new(
            crate_client,
            client,
            Arc::new(calls),
            replica.clock(),
            params,
        )))
    }
}
