//! `leasesim campaign`, `replay` and `report` as a user meets them (issue 6, "Campaigns,
//! shrinking and invariant reports"): every test drives the real binary in a temp folder
//! with a copy of a few scenarios from `sims/` and a small, pinned seed range.

mod backend;
mod bad_input;
mod deploy;
mod engine;
mod expectations;
mod folders;
mod fuzz_folders;
mod outputs;
mod regressions;
mod resume;
mod shards;
mod shrink;
mod snapshots;
mod support;
