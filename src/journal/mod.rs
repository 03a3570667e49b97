//! The fenced single-writer journal (`leasesim_core::journal`), and the ledger service built on
//! it (`leasesim_remote`): [`DurableLedger`] (its durable authority) and
//! [`LedgerServer`]/[`RemoteLedger`] (gRPC).

pub use leasesim_core::journal::*;

pub use leasesim_remote::journal::remote;
pub use leasesim_remote::journal::{
    DurableLedger, LEDGER_CHECKPOINT, LEDGER_SCHEMA_VERSION, LEDGER_SUFFIX, LedgerServer,
    RemoteLedger,
};
