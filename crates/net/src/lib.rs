//! The transport the remote services and clients are given: real TCP, or turmoil's simulated
//! TCP, behind one connection type, so the same service and client code runs on both
//! (docs/world.md#injection-points).

use std::any::Any;
use std::fmt;
use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use futures_util::Stream;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

use leasesim_core::BoxFuture;

/// A byte stream a connection can run over.
pub trait Io: AsyncRead + AsyncWrite + Send + Unpin + 'static {}
impl<T: AsyncRead + AsyncWrite + Send + Unpin + 'static> Io for T {}

/// One connection, whatever transport carries it, and the name of the host at its other end
/// when the transport knows it (a simulated host's name; never for real TCP).
pub struct Conn {
    io: Box<dyn Io>,
    peer: Peer,
    /// Whatever must live as long as the connection ([`Conn::holding`]); dropped after `io`.
    _guard: Option<Box<dyn Any + Send>>,
}

/// The host at the other end of a [`Conn`], as a server sees it: a gRPC server's request
/// extensions carry it (tonic's connect info).
#[derive(Clone, PartialEq, Eq, Debug, Default)]
pub struct Peer {
    /// The peer's host name, if the transport knows it.
    pub host: Option<String>,
}

impl Conn {
    /// Wraps a connected stream.
    pub fn new(io: impl Io) -> Self {
        Conn {
            io: Box::new(io),
            peer: Peer::default(),
            _guard: None,
        }
    }

    /// The same connection, keeping `guard` until the connection is dropped (e.g. a value
    /// whose drop counts the connection closed).
    pub fn holding(mut self, guard: impl Send + 'static) -> Self {
        self._guard = Some(Box::new(guard));
        self
    }

    /// The same connection, its peer named `host`.
    pub fn with_peer(mut self, host: impl Into<String>) -> Self {
        self.peer.host = Some(host.into());
        self
    }

    /// The peer's host name, if known.
    pub fn peer(&self) -> Option<&str> {
        self.peer.host.as_deref()
    }
}

impl fmt::Debug for Conn {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Conn")
    }
}

/// Opens a connection to an address (`host:port`).
pub type Dialer = Arc<dyn Fn(String) -> BoxFuture<io::Result<Conn>> + Send + Sync>;

/// The connections a server accepts.
pub type Incoming = Pin<Box<dyn Stream<Item = io::Result<Conn>> + Send>>;

/// Dials real TCP (tokio), with `TCP_NODELAY`: for live use.
pub fn tcp_dialer() -> Dialer {
    Arc::new(|addr: String| {
        Box::pin(async move {
            let stream = tokio::net::TcpStream::connect(&addr).await?;
            stream.set_nodelay(true)?;
            Ok(Conn::new(stream))
        })
    })
}

/// Listens on real TCP at `addr` (port 0 picks a free port); returns the bound address and
/// the accepted connections.
///
/// # Errors
/// When the address cannot be bound (in use, no permission).
pub async fn tcp_incoming(addr: &str) -> io::Result<(SocketAddr, Incoming)> {
    let listener = tokio::net::TcpListener::bind(addr).await?;
    let local = listener.local_addr()?;
    let incoming = futures_util::stream::unfold(listener, |listener| async move {
        let accepted = listener.accept().await.and_then(|(stream, _)| {
            stream.set_nodelay(true)?;
            Ok(Conn::new(stream))
        });
        Some((accepted, listener))
    });
    Ok((local, Box::pin(incoming)))
}

impl AsyncRead for Conn {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut *self.io).poll_read(cx, buf)
    }
}

impl AsyncWrite for Conn {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut *self.io).poll_write(cx, buf)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut *self.io).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut *self.io).poll_shutdown(cx)
    }
}

impl tonic::transport::server::Connected for Conn {
    type ConnectInfo = Peer;

    fn connect_info(&self) -> Self::ConnectInfo {
        self.peer.clone()
    }
}

impl hyper_util::client::legacy::connect::Connection for Conn {
    fn connected(&self) -> hyper_util::client::legacy::connect::Connected {
        hyper_util::client::legacy::connect::Connected::new()
    }
}
