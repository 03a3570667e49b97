//! The remote lease and ledger services over gRPC: the lease conformance suite and the
//! journal contract across the wire, bad input, durability across crashes and restarts, and
//! the same code over turmoil's simulated TCP.

mod bad_input;
mod conformance;
mod damage;
mod fuzz;
mod journal;
#[path = "../common/records.rs"]
mod records;
mod restart;
mod serve;
mod support;
mod turmoil;
