//! One-way reply holds (`hold_replies`): the replies a service sends to a replica are held
//! and then delivered in order, while the replica's requests and the connection's own HTTP/2
//! frames keep flowing, so the connection survives and a late reply arrives.
//!
//! turmoil 0.7.2's `hold` is always both ways (and `repair_oneway` does not combine with it):
//! holding a link holds the HTTP/2 keepalive pings' acks too, and the client drops the
//! connection after its keepalive timeout (docs/pitfalls.md#turmoil). So the world holds
//! replies itself, on the replica's side of each connection it dials: [`HeldReplies`] reads
//! what the service sent and, while [`ReplyHolds`] holds the link, keeps back every HTTP/2
//! frame of a stream (a reply's HEADERS, DATA, trailers, RST_STREAM) but passes the frames of
//! the connection itself (stream 0: SETTINGS, PING, GOAWAY, connection WINDOW_UPDATE). An
//! HTTP/1.1 connection (the API server) has no such frames: everything it sends is held.
//! Frame layout: RFC 9113 §4.1 (a 9-byte header: 24-bit length, type, flags, 31-bit stream
//! id).

use std::collections::BTreeSet;
use std::io;
use std::pin::Pin;
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{Context, Poll, Waker};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

use leasesim_net::{Conn, Dialer};

/// The links whose replies are held, as `(service, replica)`; `Clone` shares them.
#[derive(Clone, Debug, Default)]
pub struct ReplyHolds {
    state: Arc<Mutex<HoldState>>,
}

#[derive(Debug, Default)]
struct HoldState {
    held: BTreeSet<(String, String)>,
    /// Readers with replies held back, woken when a hold ends.
    waiting: Vec<Waker>,
}

impl ReplyHolds {
    /// From now on, hold the replies `from` sends to `to`.
    pub fn hold(&self, from: &str, to: &str) {
        self.lock().held.insert((from.to_owned(), to.to_owned()));
    }

    /// Delivers what was held from `from` to `to`, and holds nothing more there.
    pub fn release(&self, from: &str, to: &str) {
        let mut state = self.lock();
        state.held.remove(&(from.to_owned(), to.to_owned()));
        state.waiting.drain(..).for_each(Waker::wake);
    }

    /// Releases every hold.
    pub fn heal(&self) {
        let mut state = self.lock();
        state.held.clear();
        state.waiting.drain(..).for_each(Waker::wake);
    }

    fn is_held(&self, from: &str, to: &str) -> bool {
        let state = self.lock();
        !state.held.is_empty() && state.held.iter().any(|(f, t)| f == from && t == to)
    }

    fn wake_on_release(&self, waker: &Waker) {
        let mut state = self.lock();
        if !state.waiting.iter().any(|w| w.will_wake(waker)) {
            state.waiting.push(waker.clone());
        }
    }

    fn lock(&self) -> MutexGuard<'_, HoldState> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// `dialer`, with the replies on every connection replica `replica` opens held as `holds`
/// says (the service is the host part of the dialed `host:port`).
pub fn holding_dialer(dialer: Dialer, replica: &str, holds: ReplyHolds) -> Dialer {
    let replica = replica.to_owned();
    Arc::new(move |addr: String| {
        let (dialer, holds, replica) = (dialer.clone(), holds.clone(), replica.clone());
        Box::pin(async move {
            let service = addr.split(':').next().unwrap_or_default().to_owned();
            let conn = dialer(addr).await?;
            Ok(Conn::new(HeldReplies::new(conn, service, replica, holds)))
        })
    })
}

/// What the service speaks, told by its first byte: an HTTP/2 server's first frame is its
/// SETTINGS, whose 24-bit length starts with a zero byte; an HTTP/1.1 reply starts `HTTP/`.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Protocol {
    Unknown,
    Http2,
    Http1,
}

/// HTTP/2 frame header length (RFC 9113 §4.1).
const FRAME_HEADER: usize = 9;

/// One connection's read side with its replies held while its link is held.
pub struct HeldReplies {
    inner: Conn,
    service: String,
    replica: String,
    holds: ReplyHolds,
    protocol: Protocol,
    /// Bytes read but not yet a whole HTTP/2 frame.
    partial: Vec<u8>,
    /// Held back, in order.
    held: Vec<u8>,
    /// Ready for the reader, from `out_at`.
    out: Vec<u8>,
    out_at: usize,
    /// The service closed the connection (after what is held).
    eof: bool,
}

impl HeldReplies {
    fn new(inner: Conn, service: String, replica: String, holds: ReplyHolds) -> Self {
        HeldReplies {
            inner,
            service,
            replica,
            holds,
            protocol: Protocol::Unknown,
            partial: Vec::new(),
            held: Vec::new(),
            out: Vec::new(),
            out_at: 0,
            eof: false,
        }
    }

    /// Sorts bytes the service sent into held and ready ones.
    fn sort(&mut self, bytes: &[u8], holding: bool) {
        if self.protocol == Protocol::Unknown {
            self.protocol = if bytes[0] == 0 {
                Protocol::Http2
            } else {
                Protocol::Http1
            };
        }
        if self.protocol == Protocol::Http1 {
            let queue = if holding || !self.held.is_empty() {
                &mut self.held
            } else {
                &mut self.out
            };
            queue.extend_from_slice(bytes);
            return;
        }
        self.partial.extend_from_slice(bytes);
        let mut at = 0;
        while self.partial.len() - at >= FRAME_HEADER {
            let header = &self.partial[at..at + FRAME_HEADER];
            let length =
                usize::from(header[0]) << 16 | usize::from(header[1]) << 8 | usize::from(header[2]);
            let stream =
                u32::from_be_bytes([header[5], header[6], header[7], header[8]]) & 0x7fff_ffff;
            let end = at + FRAME_HEADER + length;
            if self.partial.len() < end {
                break;
            }
            // A stream's frames queue behind what is held, so each stream keeps its order;
            // the connection's own frames pass.
            let queue = if stream != 0 && (holding || !self.held.is_empty()) {
                &mut self.held
            } else {
                &mut self.out
            };
            queue.extend_from_slice(&self.partial[at..end]);
            at = end;
        }
        self.partial.drain(..at);
    }
}

impl AsyncRead for HeldReplies {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = &mut *self;
        loop {
            let holding = this.holds.is_held(&this.service, &this.replica);
            if !holding && !this.held.is_empty() {
                this.out.append(&mut this.held);
            }
            if this.out_at < this.out.len() {
                let n = buf.remaining().min(this.out.len() - this.out_at);
                buf.put_slice(&this.out[this.out_at..this.out_at + n]);
                this.out_at += n;
                if this.out_at == this.out.len() {
                    this.out.clear();
                    this.out_at = 0;
                }
                return Poll::Ready(Ok(()));
            }
            if this.eof {
                if this.held.is_empty() {
                    return Poll::Ready(Ok(()));
                }
                this.holds.wake_on_release(cx.waker());
                return Poll::Pending;
            }
            let mut scratch = [0u8; 8 * 1024];
            let mut read = ReadBuf::new(&mut scratch);
            match Pin::new(&mut this.inner).poll_read(cx, &mut read) {
                Poll::Pending => {
                    if !this.held.is_empty() {
                        this.holds.wake_on_release(cx.waker());
                    }
                    return Poll::Pending;
                }
                Poll::Ready(Err(error)) => return Poll::Ready(Err(error)),
                Poll::Ready(Ok(())) if read.filled().is_empty() => this.eof = true,
                Poll::Ready(Ok(())) => {
                    let bytes = read.filled().to_vec();
                    this.sort(&bytes, holding);
                }
            }
        }
    }
}

impl AsyncWrite for HeldReplies {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write(cx, buf)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frame(stream: u32, payload: &[u8]) -> Vec<u8> {
        let len = payload.len();
        let mut bytes = vec![(len >> 16) as u8, (len >> 8) as u8, len as u8, 0, 0];
        bytes.extend_from_slice(&stream.to_be_bytes());
        bytes.extend_from_slice(payload);
        bytes
    }

    fn reader(holds: &ReplyHolds) -> HeldReplies {
        let (client, _server) = tokio::io::duplex(64);
        HeldReplies::new(
            Conn::new(client),
            "lease".into(),
            "replica-1".into(),
            holds.clone(),
        )
    }

    #[test]
    fn while_held_stream_frames_wait_and_connection_frames_pass() {
        let holds = ReplyHolds::default();
        holds.hold("lease", "replica-1");
        let mut conn = reader(&holds);
        let settings = frame(0, b"s");
        let reply = frame(1, b"reply");
        let ping = frame(0, b"pingpong");
        let bytes = [settings.clone(), reply.clone(), ping.clone()].concat();
        // Split mid-frame: the parser waits for the rest.
        conn.sort(&bytes[..12], true);
        conn.sort(&bytes[12..], true);
        assert_eq!(conn.out, [settings, ping].concat());
        assert_eq!(conn.held, reply);
        assert!(conn.partial.is_empty());
    }

    #[test]
    fn an_http1_connection_is_held_whole_and_a_free_link_passes_everything() {
        let holds = ReplyHolds::default();
        let mut conn = reader(&holds);
        conn.sort(b"HTTP/1.1 200 OK\r\n", true);
        assert!(conn.out.is_empty());
        assert_eq!(conn.held, b"HTTP/1.1 200 OK\r\n");
        let mut free = reader(&holds);
        let reply = frame(3, b"r");
        free.sort(&reply, false);
        assert_eq!(free.out, reply);
    }
}
