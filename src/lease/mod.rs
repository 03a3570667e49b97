//! The lease contract and MemLease (`leasesim_core::lease`), and the backends built on it:
//! [`DurableLease`] and [`RemoteLease`] (the lease service and its gRPC driver,
//! `leasesim_remote`), [`FlockLease`] (`flock(2)` on per-session files: one host, real time
//! only, `leasesim_flock`), [`KubeLease`] (Kubernetes `coordination.k8s.io/v1` Lease objects,
//! expiry judged by observation, `leasesim_kube`) and, with the `etcd` feature, `EtcdLease`
//! (docs/backends.md).

pub use leasesim_core::lease::*;

#[cfg(feature = "etcd")]
pub mod etcd;
pub use leasesim_flock as flock;
pub use leasesim_kube as kube;
pub use leasesim_remote::lease::remote;

pub use leasesim_flock::{FlockLease, FlockLeaseConfig};
pub use leasesim_kube::{
    KubeCall, KubeCalls, KubeConfigError, KubeLease, KubeLeaseConfig, KubeReply, client_over,
};
pub use leasesim_remote::lease::{
    DurableLease, DurableLeaseConfig, LeaseServer, RemoteLease, STATE_FILE, STATE_SCHEMA_VERSION,
};
