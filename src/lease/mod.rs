//! The lease contract and MemLease (`leasesim_core::lease`), and the backends built on it:
//! [`DurableLease`] and [`RemoteLease`] (the lease service and its gRPC driver), [`FlockLease`]
//! (`flock(2)` on per-session files: one host, real time only), [`KubeLease`] (Kubernetes
//! `coordination.k8s.io/v1` Lease objects, expiry judged by observation: [`kube`]) and, with
//! the `etcd` feature, `EtcdLease` (docs/backends.md).

pub use leasesim_core::lease::*;

mod durable;
#[cfg(feature = "etcd")]
pub mod etcd;
pub mod flock;
pub mod kube;
pub mod remote;

pub use durable::{DurableLease, DurableLeaseConfig, STATE_FILE, STATE_SCHEMA_VERSION};
pub use flock::{FlockLease, FlockLeaseConfig};
pub use kube::{
    KubeCall, KubeCalls, KubeConfigError, KubeLease, KubeLeaseConfig, KubeReply, client_over,
};
pub use remote::{LeaseServer, RemoteLease};
