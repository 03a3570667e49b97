//! The fenced single-writer journal (`leasesim_core::journal`), and the ledger service built on
//! it: [`DurableLedger`] (its durable authority) and [`LedgerServer`]/[`RemoteLedger`] (gRPC).

pub use leasesim_core::journal::*;

mod durable;
pub mod remote;

pub use durable::{DurableLedger, LEDGER_CHECKPOINT, LEDGER_SCHEMA_VERSION, LEDGER_SUFFIX};
pub use remote::{LedgerServer, RemoteLedger};
