//! A [`KubeLease`] on a real cluster (the `kube-cluster` feature): kubeconfig or in-cluster
//! service account through `kube::Config::infer`, TLS by rustls. Never used by the world
//! (docs/pitfalls.md#kube-rs: `Config::infer` reads the environment and the real clock).

use super::{KubeConfigError, KubeLease, KubeLeaseConfig};

/// Why a [`KubeLease`] on a real cluster could not be built.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ClusterError {
    /// No usable kubeconfig (`$KUBECONFIG`, `~/.kube/config`) or in-cluster environment.
    #[error("no Kubernetes configuration found (set KUBECONFIG or run in a pod): {0}")]
    Infer(#[from] kube::config::InferConfigError),
    /// The configuration was found but a client could not be built from it (TLS, auth).
    #[error("cannot build a Kubernetes client from the configuration: {0}")]
    Client(#[from] kube::Error),
    /// The lease settings were refused.
    #[error(transparent)]
    Config(#[from] KubeConfigError),
}

impl KubeLease {
    /// A backend on the cluster `kube::Config::infer` finds (kubeconfig first, then the pod's
    /// service account), writing Lease objects in `config.namespace`. The account needs the
    /// RBAC verbs get, create and update on `leases.coordination.k8s.io` in that namespace.
    ///
    /// # Errors
    /// [`ClusterError`] when no configuration is found, the client cannot be built, or the
    /// settings are refused.
    pub async fn from_cluster(config: KubeLeaseConfig) -> Result<KubeLease, ClusterError> {
        let inferred = kube::Config::infer().await?;
        let client = kube::Client::try_from(inferred)?;
        Ok(KubeLease::new(client, config)?)
    }
}
