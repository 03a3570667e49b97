//! turmoil's simulated TCP as a [`crate::net`] transport.
//!
//! Call these only inside a turmoil simulation (from a host or client closure).

use std::io;
use std::sync::Arc;

use crate::net::{Conn, Dialer, Incoming};

/// Dials turmoil TCP (`host:port`, host names resolved by the simulation).
pub fn turmoil_dialer() -> Dialer {
    Arc::new(|addr: String| {
        Box::pin(async move {
            let stream = turmoil::net::TcpStream::connect(addr).await?;
            Ok(Conn::new(stream))
        })
    })
}

/// Listens on turmoil TCP at `addr` (e.g. `0.0.0.0:7070`); each connection names its peer
/// host ([`Conn::peer`]).
///
/// # Errors
/// When the simulated host cannot bind it.
pub async fn turmoil_incoming(addr: &str) -> io::Result<Incoming> {
    let listener = turmoil::net::TcpListener::bind(addr).await?;
    let incoming = futures_util::stream::unfold(listener, |listener| async move {
        // The peer's host name, for faults that single out a caller (`authority_errors`).
        let accepted = listener.accept().await.map(|(stream, peer)| {
            let conn = Conn::new(stream);
            match turmoil::reverse_lookup(peer.ip()) {
                Some(host) => conn.with_peer(host),
                None => conn,
            }
        });
        Some((accepted, listener))
    });
    Ok(Box::pin(incoming))
}
