//! Live mode on real processes (issue 16): `leasesim replica`, `leasesim serve … --history`,
//! `leasesim live` with its nemesis (signals, a TCP proxy, libfaketime), the merged history
//! judged by the same checkers as the simulated world. Tests take [`support::serial`]: SIGSTOP
//! timing on 2 busy cores is flaky when live runs share them.

mod l1;
mod mutants;
mod out_folder;
mod proxy;
mod reap;
#[path = "../common/records.rs"]
mod records;
mod replica;
mod run;
mod services;
mod spawned;
mod support;
