//! The system under test, specified by its contract: the lease conformance suite, the fenced
//! journal and the service layer.

mod conformance;
mod journal;
mod kube;
mod service;
mod support;
