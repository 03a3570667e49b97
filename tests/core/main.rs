//! The system under test, specified by its contract: the lease conformance suite, the fenced
//! journal and the service layer.

mod conformance;
mod journal;
mod kube;
#[cfg(feature = "kube-cluster")]
mod kube_cluster;
#[path = "../common/records.rs"]
mod records;
mod service;
mod support;
