//! loom model-checking suites over the in-process lease map, the mem ledger, the fenced
//! journal and the service's run-entry gate and registry. Built only with
//! the `loom` feature (docs/model-checking.md); every suite honours
//! `LOOM_MAX_PREEMPTIONS`, and each planted bug (`leasesim::mutant`) has a test proving its
//! suite kills it.
#![cfg(feature = "loom")]

mod bench;
mod gate;
mod journal;
mod lease;
mod ledger;
mod support;
