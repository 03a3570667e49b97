//! The ledger service: [`DurableLedger`] (the durable authority) and [`LedgerServer`] /
//! [`RemoteLedger`] (its gRPC service and client).

mod durable;
pub mod remote;

pub use durable::{DurableLedger, LEDGER_CHECKPOINT, LEDGER_SCHEMA_VERSION, LEDGER_SUFFIX};
pub use remote::{LedgerServer, RemoteLedger};
