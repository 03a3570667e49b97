//! The lease service: [`DurableLease`] (the durable authority) and [`LeaseServer`] /
//! [`RemoteLease`] (its gRPC service and client), docs/backends.md#the-grpc-lease-service.

mod durable;
pub mod remote;

pub use durable::{DurableLease, DurableLeaseConfig, STATE_FILE, STATE_SCHEMA_VERSION};
pub use remote::{LeaseServer, RemoteLease};
