//! `FlockLease` in real time: the conformance suite, and real processes (`leasesim flock`)
//! racing, crashing, forking and stopping over real files (issue 15, field case F8).

mod conformance;
mod records;
