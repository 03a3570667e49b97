//! turmoil's simulated TCP as a [`leasesim_net`] transport, and each host's connections closed
//! in the order they were opened when the host crashes or restarts.
//!
//! Call these only inside a turmoil simulation (from a host or client closure).
//!
//! Why the order needs a rule: a crash or restart drops the host's tokio runtime, and tokio
//! drops a runtime's tasks shard by shard, the shard being the task's id modulo 4 — an id taken
//! from a counter shared by the whole process. Each dropped connection sends its FIN (or RST),
//! and each segment draws its latency from the world's one RNG, so the order of the drops
//! would decide which connection gets which latency, and with it every later draw: the same
//! seed gave two histories depending on how many tasks the process had spawned before (every
//! fourth run in one process, at random in a busy test process). [`HostConns`] parks a
//! host's streams while it is torn down and closes them in the order they were opened.

use std::collections::BTreeMap;
use std::io;
use std::pin::Pin;
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{Context, Poll};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use turmoil::net::TcpStream;

use leasesim_net::{Conn, Dialer, Incoming};

/// Dials turmoil TCP (`host:port`, host names resolved by the simulation). The connections are
/// not numbered: a world dials through [`HostConns::dialer`].
pub fn turmoil_dialer() -> Dialer {
    Arc::new(|addr: String| {
        Box::pin(async move {
            let stream = TcpStream::connect(addr).await?;
            Ok(Conn::new(stream))
        })
    })
}

/// Listens on turmoil TCP at `addr` (e.g. `0.0.0.0:7070`); each connection names its peer
/// host ([`Conn::peer`]). The connections are not numbered: a world listens through
/// [`HostConns::incoming`].
///
/// # Errors
/// When the simulated host cannot bind it.
pub async fn turmoil_incoming(addr: &str) -> io::Result<Incoming> {
    incoming_wrapped(addr, Conn::new).await
}

async fn incoming_wrapped<F>(addr: &str, wrap: F) -> io::Result<Incoming>
where
    F: Fn(TcpStream) -> Conn + Send + 'static,
{
    let listener = turmoil::net::TcpListener::bind(addr).await?;
    let incoming = futures_util::stream::unfold((listener, wrap), |(listener, wrap)| async move {
        // The peer's host name, for faults that single out a caller (`authority_errors`).
        let accepted = listener.accept().await.map(|(stream, peer)| {
            let conn = wrap(stream);
            match turmoil::reverse_lookup(peer.ip()) {
                Some(host) => conn.with_peer(host),
                None => conn,
            }
        });
        Some((accepted, (listener, wrap)))
    });
    Ok(Box::pin(incoming))
}

/// One host's simulated connections, dialed and accepted, numbered in the order they were
/// opened; shared by the host's incarnations (it outlives crashes, as
/// [`super::hosts::Hosts`] does).
///
/// While the nemesis tears the host down ([`HostConns::tear_down`]) a dropped connection is
/// parked rather than closed; the host's closer ([`HostConns::close_at_teardown`], the last
/// task the teardown drops) then closes the parked ones, oldest first. Outside a teardown a
/// connection closes when it is dropped, as a plain turmoil stream does.
#[derive(Clone, Default)]
pub(crate) struct HostConns(Arc<Mutex<ConnsState>>);

#[derive(Default)]
struct ConnsState {
    /// The host runs on the engine: its connections are turmoil-net's, unnumbered
    /// (docs/world.md#the-world-on-the-engine).
    engine: bool,
    /// Connections opened so far: the next one's number.
    opened: u64,
    /// Whether the nemesis is crashing or restarting the host now.
    tearing_down: bool,
    /// The streams dropped during the teardown, by number.
    parked: BTreeMap<u64, TcpStream>,
}

/// How long an engine host retries binding a port another socket of its kernel still holds.
const REBIND_EVERY: std::time::Duration = std::time::Duration::from_millis(50);

/// How many times it retries (a minute): the lingering sockets of a process that was killed
/// close when TCP gives up on them, `(retx_max + 1) × rto` after the kill while the link is
/// cut (1.2 s at turmoil-net's default; the world's is Linux's 924.6 s, which is why each new
/// boot there gets a fresh kernel), but only when the peer closes its side while it answers:
/// a peer that is frozen, or never reads, keeps the socket in FIN_WAIT_2 (turmoil-net has no
/// orphan timeout, Linux's is 60 s; docs/engine.md#wall-clocks-and-reboots).
const REBIND_TRIES: u32 = 1_200;

impl HostConns {
    /// The connections of a host on the engine: dialed and accepted through turmoil-net
    /// (`leasesim_engine::transport`). Not numbered: turmoil-net draws no latency per
    /// segment, so the order in which a teardown closes them moves no random draw.
    pub(crate) fn on_engine() -> HostConns {
        let conns = HostConns::default();
        conns.lock().engine = true;
        conns
    }

    fn engine(&self) -> bool {
        self.lock().engine
    }

    /// Dials turmoil TCP (`host:port`), each connection numbered; on the engine, turmoil-net's.
    pub(crate) fn dialer(&self) -> Dialer {
        if self.engine() {
            return leasesim_engine::transport::dialer();
        }
        let conns = self.clone();
        Arc::new(move |addr: String| {
            let conns = conns.clone();
            Box::pin(async move {
                let stream = TcpStream::connect(addr).await?;
                Ok(conns.wrap(stream))
            })
        })
    }

    /// Listens on turmoil TCP at `addr`, each accepted connection numbered and naming its
    /// peer host.
    ///
    /// # Errors
    /// When the simulated host cannot bind it.
    pub(crate) async fn incoming(&self, addr: &str) -> io::Result<Incoming> {
        if self.engine() {
            return engine_incoming(addr).await;
        }
        let conns = self.clone();
        incoming_wrapped(addr, move |stream| conns.wrap(stream)).await
    }

    /// Spawns this incarnation's closer: a local task that waits forever, so the teardown
    /// drops it after every runtime task (turmoil drops the runtime, then the local set), and
    /// whose drop closes the streams the teardown parked, in the order they were opened. Call
    /// it first thing in a host's software, inside the host.
    ///
    /// # Panics
    /// Outside a host's local task set (turmoil runs each host's software in one).
    pub(crate) fn close_at_teardown(&self) {
        if self.engine() {
            return;
        }
        let closer = Closer(self.clone());
        tokio::task::spawn_local(async move {
            let _closer = closer;
            std::future::pending::<()>().await;
        });
    }

    /// Runs `teardown` (turmoil's crash or bounce of this host) with the host's dropped
    /// connections parked for its closer.
    pub(crate) fn tear_down<R>(&self, teardown: impl FnOnce() -> R) -> R {
        self.lock().tearing_down = true;
        let result = teardown();
        let mut state = self.lock();
        state.tearing_down = false;
        debug_assert!(
            state.parked.is_empty(),
            "a teardown left {} connections parked: the host's software never called \
             HostConns::close_at_teardown",
            state.parked.len()
        );
        result
    }

    fn wrap(&self, stream: TcpStream) -> Conn {
        let number = {
            let mut state = self.lock();
            state.opened += 1;
            state.opened
        };
        Conn::new(NumberedStream {
            number,
            stream: Some(stream),
            conns: self.clone(),
        })
    }

    /// Closes the parked streams, oldest first (outside the lock: a close sends a segment).
    fn close_parked(&self) {
        let parked = std::mem::take(&mut self.lock().parked);
        for (_, stream) in parked {
            drop(stream);
        }
    }

    fn lock(&self) -> MutexGuard<'_, ConnsState> {
        self.0
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

/// Listens on the engine's TCP at `addr`. A new boot has a fresh kernel and binds at once
/// (docs/engine.md#fresh-kernels); one that has used up its fresh kernels may find its port
/// held by the old boot's sockets (docs/engine.md#restarts): it retries every
/// [`REBIND_EVERY`] of its host's clock until they are gone, as a service restarted under
/// systemd would.
async fn engine_incoming(addr: &str) -> io::Result<Incoming> {
    let mut tries = 0;
    loop {
        match leasesim_engine::transport::incoming(addr).await {
            Err(e) if e.kind() == io::ErrorKind::AddrInUse && tries < REBIND_TRIES => {
                tries += 1;
                #[allow(clippy::disallowed_methods, reason = "the engine host's own clock")]
                tokio::time::sleep(REBIND_EVERY).await;
            }
            bound => return bound,
        }
    }
}

/// Closes the parked streams when the teardown drops it.
struct Closer(HostConns);

impl Drop for Closer {
    fn drop(&mut self) {
        self.0.close_parked();
    }
}

/// A turmoil stream with its number among the host's connections.
struct NumberedStream {
    number: u64,
    /// Always there until the drop.
    stream: Option<TcpStream>,
    conns: HostConns,
}

impl NumberedStream {
    fn stream(&mut self) -> Pin<&mut TcpStream> {
        Pin::new(
            self.stream
                .as_mut()
                .expect("a stream is there until its drop"),
        )
    }
}

impl Drop for NumberedStream {
    fn drop(&mut self) {
        let Some(stream) = self.stream.take() else {
            return;
        };
        let mut state = self.conns.lock();
        if state.tearing_down {
            state.parked.insert(self.number, stream);
        } else {
            drop(state);
            drop(stream);
        }
    }
}

impl AsyncRead for NumberedStream {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        self.stream().poll_read(cx, buf)
    }
}

impl AsyncWrite for NumberedStream {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        self.stream().poll_write(cx, buf)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        self.stream().poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        self.stream().poll_shutdown(cx)
    }
}
