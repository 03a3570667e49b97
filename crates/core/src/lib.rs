//! The system under test: session leases with fencing tokens ([`lease`]), the fenced
//! single-writer journal ([`journal`]), the service that runs work under a lease ([`service`])
//! and the storage the durable backends keep their state in ([`storage`]).
//!
//! It knows nothing of the harness — no history, checker, world or report is a dependency of
//! this crate — and takes time only from a [`clock::Clock`]. What a harness may do to it is
//! defined here and does nothing by default: the clock, the pause points and observations
//! ([`hooks`]) and the planted bugs ([`mutant`]). The contracts are fixed in docs/contracts.md;
//! the layers in docs/architecture.md#layers.

#![deny(missing_docs)]

pub mod clock;
pub mod hooks;
pub mod journal;
pub mod lease;
pub mod mutant;
pub mod service;
pub mod storage;
#[doc(hidden)]
pub mod sync;

/// A boxed, sendable future: the shape of callbacks such as dialers and clock advances.
pub type BoxFuture<T> = std::pin::Pin<Box<dyn std::future::Future<Output = T> + Send>>;
