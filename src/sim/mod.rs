//! The simulated world on turmoil. For now, the transport: the same remote services and
//! clients run over turmoil's simulated TCP through [`net`]. Hosts, per-host clocks, faults
//! and the workload come with the world issue.

pub mod clock;
pub mod freeze;
pub mod generate;
mod nemesis;
pub mod net;
pub mod record;
pub mod runner;
pub mod schedule;
pub mod script;
pub mod seed;
mod workload;
pub mod world;
