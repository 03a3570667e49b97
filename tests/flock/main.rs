//! `FlockLease` in real time: the conformance suite, and real processes (`leasesim flock`)
//! racing, crashing, forking and stopping over real files (issue 15, field case F8).

mod conformance;
mod crash;
mod fork;
mod kill;
mod kills;
mod names;
mod program;
mod race;
mod records;
mod support;
mod suspend;
#[path = "../common/tree.rs"]
mod tree;
mod unlink;
