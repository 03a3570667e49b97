//! loom model-checking suites over the in-process lease map, the mem ledger and the run-entry
//! gate. Built only with `--cfg leasesim_loom` (README, "Model checking").
#![cfg(leasesim_loom)]
