//! leasesim: deterministic simulation and model checking for session leases with fencing
//! tokens and fenced single-writer journals.
//!
//! The system under test lives in [`lease`], [`journal`], [`service`] and [`clock`]; it knows
//! nothing of the harness and takes time only from a [`clock::Clock`]. [`conformance`] checks
//! any [`lease::SessionLease`] backend against the lease contract. The contracts are fixed in
//! the project's design document, `docs/` (its index: `docs/README.md`); every rule cited here
//! is named there.

#![deny(missing_docs)]

pub mod campaign;
pub mod check;
pub mod cli;
pub mod clock;
pub mod conformance;
pub mod exit;
pub mod history;
pub mod hooks;
pub mod input;
pub mod journal;
pub mod lease;
pub mod live;
pub mod mutant;
pub mod mutants;
pub mod net;
pub mod regular_file;
pub mod remote;
pub mod report;
pub mod results;
pub mod service;
pub mod sim;
pub mod storage;
mod sync;
pub mod time;

/// A boxed, sendable future: the shape of callbacks such as dialers and clock advances.
pub type BoxFuture<T> = std::pin::Pin<Box<dyn std::future::Future<Output = T> + Send>>;
