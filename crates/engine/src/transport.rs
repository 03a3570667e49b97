//! leasesim's transport ([`leasesim_net`]) over the engine's network: the same [`Dialer`] and
//! [`Incoming`] the services and clients take for real TCP and for turmoil's TCP
//! (docs/world.md#injection-points), here dialing and accepting through turmoil-net's
//! `tokio::net` shim (docs/engine.md#transport).
//!
//! Call them only from a task of an engine host with a network ([`crate::Engine::with_network`]):
//! turmoil-net sends a socket call to the kernel of the host whose slice is running.

use std::io;
use std::net::IpAddr;
use std::sync::Arc;

use leasesim_net::{Conn, Dialer, Incoming};
use turmoil_net::shim::tokio::net::{TcpListener, TcpStream};

/// Dials the engine's TCP (`host:port`, the host named as it was added to the engine).
///
/// A connection that cannot be made fails as a socket's connect does: `ConnectionRefused`
/// when nothing listens there, `TimedOut` when the handshake outlasts every retransmission
/// (docs/engine.md#network).
pub fn dialer() -> Dialer {
    Arc::new(|addr: String| {
        Box::pin(async move {
            let stream = TcpStream::connect(addr.as_str()).await?;
            Ok(Conn::new(stream))
        })
    })
}

/// Listens on the engine's TCP at `addr` (e.g. `0.0.0.0:7070`) on the current host; each
/// accepted connection names its peer host ([`Conn::peer`]), as the turmoil transport's do,
/// for faults that single out a caller.
///
/// # Errors
/// When the host cannot bind `addr` (`AddrInUse`: turmoil-net allows no second bind of a port
/// while any socket holds it, docs/engine.md#restarts).
pub async fn incoming(addr: &str) -> io::Result<Incoming> {
    let listener = TcpListener::bind(addr).await?;
    let accepted = futures_util::stream::unfold(listener, |listener| async move {
        let conn = listener
            .accept()
            .await
            .map(|(stream, peer)| named(Conn::new(stream), peer.ip()));
        Some((conn, listener))
    });
    Ok(Box::pin(accepted))
}

/// `conn`, its peer named when `peer` is an engine host's address.
fn named(conn: Conn, peer: IpAddr) -> Conn {
    match crate::net::host_name(peer) {
        Some(host) => conn.with_peer(&*host),
        None => conn,
    }
}
