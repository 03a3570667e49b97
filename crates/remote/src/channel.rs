//! A client's connection to one server: a tonic channel over the given [`Dialer`], rebuilt
//! after a call times out, with bounded exponential backoff between connection attempts.
//!
//! Why rebuild: a turmoil partition drops in-flight segments for good, so a connection with
//! data in flight stays stuck after the partition heals; HTTP/2 keepalive notices a dead
//! connection, and dropping the channel after a timeout does not wait for it. Why back off:
//! turmoil 0.7.2 leaks an ephemeral port per failed connect (docs/pitfalls.md#turmoil).

use std::sync::Arc;
use std::time::Duration;

use tonic::Status;
use tonic::transport::{Channel, Endpoint, Uri};

use crate::status;

use leasesim_core::clock::{Clock, Instant};
use leasesim_core::sync::{Mutex, lock};
use leasesim_net::{Conn, Dialer};

/// Settings shared by the remote clients.
#[derive(Clone, Debug)]
pub struct ClientConfig {
    /// Deadline of every call (default 2 s); a call past it has an unknown outcome.
    pub call_timeout: Duration,
    /// Deadline of a connection attempt (default 1 s).
    pub connect_timeout: Duration,
    /// HTTP/2 keepalive ping interval (default 1 s).
    pub keepalive_interval: Duration,
    /// How long a keepalive ping may go unanswered before the connection is dropped
    /// (default 2 s).
    pub keepalive_timeout: Duration,
    /// Wait after the first failed connection attempt (default 50 ms), doubling per failure.
    pub reconnect_backoff_min: Duration,
    /// Longest wait between connection attempts (default 2 s).
    pub reconnect_backoff_max: Duration,
}

impl Default for ClientConfig {
    fn default() -> Self {
        ClientConfig {
            call_timeout: Duration::from_secs(2),
            connect_timeout: Duration::from_secs(1),
            keepalive_interval: Duration::from_secs(1),
            keepalive_timeout: Duration::from_secs(2),
            reconnect_backoff_min: Duration::from_millis(50),
            reconnect_backoff_max: Duration::from_secs(2),
        }
    }
}

/// A lazily connected, self-healing channel to `addr`.
#[derive(Debug)]
pub struct RemoteChannel {
    endpoint: Endpoint,
    connector: Connector,
    channel: Mutex<Option<Channel>>,
}

impl RemoteChannel {
    /// A channel to `addr` (`host:port`) over `dialer`, waiting between connection attempts
    /// on `clock`.
    ///
    /// # Errors
    /// When `addr` does not form a valid URI.
    pub fn new(
        addr: &str,
        dialer: Dialer,
        clock: Arc<dyn Clock>,
        config: &ClientConfig,
    ) -> Result<Self, String> {
        let endpoint = Endpoint::from_shared(format!("http://{addr}"))
            .map_err(|e| format!("bad server address `{addr}`: {e}"))?
            .timeout(config.call_timeout)
            .connect_timeout(config.connect_timeout)
            .http2_keep_alive_interval(config.keepalive_interval)
            .keep_alive_timeout(config.keepalive_timeout)
            .keep_alive_while_idle(true);
        let connector = Connector {
            dialer,
            clock,
            backoff: Arc::new(Mutex::new(Backoff::new(config))),
        };
        Ok(RemoteChannel {
            endpoint,
            connector,
            channel: Mutex::new(None),
        })
    }

    /// The current channel, built on first use.
    pub fn get(&self) -> Channel {
        lock(&self.channel)
            .get_or_insert_with(|| {
                let connector = self.connector.clone();
                self.endpoint
                    .connect_with_connector_lazy(tower::service_fn(move |uri: Uri| {
                        let connector = connector.clone();
                        async move { connector.connect(uri).await }
                    }))
            })
            .clone()
    }

    /// Notes a call's failure: when `status` suggests the connection timed out or broke
    /// ([`status::connection_suspect`]), drops the current channel so the next call starts
    /// on a fresh connection.
    pub fn failed(&self, status: &Status) {
        if status::connection_suspect(status) {
            *lock(&self.channel) = None;
        }
    }
}

/// Dials through the dialer, no sooner than the backoff allows.
#[derive(Clone)]
struct Connector {
    dialer: Dialer,
    clock: Arc<dyn Clock>,
    backoff: Arc<Mutex<Backoff>>,
}

impl std::fmt::Debug for Connector {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Connector")
    }
}

impl Connector {
    async fn connect(&self, uri: Uri) -> std::io::Result<hyper_util::rt::TokioIo<Conn>> {
        let not_before = lock(&self.backoff).not_before;
        self.clock.sleep_until(not_before).await;
        let addr = uri
            .authority()
            .map(|a| a.as_str().to_owned())
            .unwrap_or_default();
        let outcome = (self.dialer)(addr).await;
        let now = self.clock.now();
        lock(&self.backoff).record(outcome.is_ok(), now);
        outcome.map(hyper_util::rt::TokioIo::new)
    }
}

/// Bounded exponential backoff between connection attempts.
#[derive(Debug)]
struct Backoff {
    min: Duration,
    max: Duration,
    next_wait: Duration,
    not_before: Instant,
}

impl Backoff {
    fn new(config: &ClientConfig) -> Self {
        Backoff {
            min: config.reconnect_backoff_min,
            max: config.reconnect_backoff_max,
            next_wait: config.reconnect_backoff_min,
            not_before: Instant::ZERO,
        }
    }

    fn record(&mut self, connected: bool, now: Instant) {
        if connected {
            self.next_wait = self.min;
            self.not_before = Instant::ZERO;
        } else {
            self.not_before = now + self.next_wait;
            self.next_wait = (self.next_wait * 2).min(self.max);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn failed_connects_double_the_wait_up_to_the_cap_and_success_resets_it() {
        let mut backoff = Backoff::new(&ClientConfig::default());
        let t = |ms| Instant::from_origin(Duration::from_millis(ms));
        let mut waits = Vec::new();
        for _ in 0..8 {
            backoff.record(false, t(1_000));
            waits.push((backoff.not_before - t(1_000)).as_millis());
        }
        assert_eq!(waits, [50, 100, 200, 400, 800, 1600, 2000, 2000]);
        backoff.record(true, t(2_000));
        assert_eq!(backoff.not_before, Instant::ZERO);
        backoff.record(false, t(3_000));
        assert_eq!(backoff.not_before, t(3_050));
    }
}
