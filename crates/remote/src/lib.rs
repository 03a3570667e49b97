//! `leasesim-remote`: the lease and ledger services of leasesim's system under test
//! (docs/services.md).
//!
//! - [`lease`] — [`lease::DurableLease`], the lease service's durable authority (tokens that
//!   survive restarts, the restart grace), and its gRPC server and client
//!   ([`lease::LeaseServer`], [`lease::RemoteLease`]);
//! - [`journal`] — [`journal::DurableLedger`], the ledger's durable authority, and its gRPC
//!   server and client ([`journal::LedgerServer`], [`journal::RemoteLedger`]);
//! - [`proto`] (the committed generated protocol), [`wire`] (conversions), [`status`] (status
//!   mapping) and the self-healing client channel ([`RemoteChannel`]).
//!
//! The durable authorities keep their records in the protocol's messages, so they live here
//! beside the services rather than in `leasesim-core`.

mod channel;
pub mod journal;
pub mod lease;
pub mod proto;
pub mod status;
pub mod wire;

pub use channel::{ClientConfig, RemoteChannel};

/// Largest request or reply a service or client decodes, in bytes (2 MiB): room for one
/// event of [`wire::PAYLOAD_MAX_BYTES`] plus framing. Larger messages are refused before they
/// are parsed, with OUT_OF_RANGE (tonic's code for its decoding limit). Clients check event
/// payloads against [`wire::PAYLOAD_MAX_BYTES`] before sending, so they never send one.
pub const MESSAGE_MAX_BYTES: usize = 2 << 20;
