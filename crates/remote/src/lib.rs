//! gRPC plumbing shared by the remote lease and ledger services and their clients: the
//! generated protocol, conversions, status mapping and the client channel.
//!
//! The services themselves live beside their domain: [`crate::lease::remote`] and
//! [`crate::journal::remote`].

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
