//! leasesim's next world engine (issue 44, first stage; docs/engine.md).
//!
//! Built beside the turmoil world, used by nothing yet. Each host runs on its own
//! current-thread tokio runtime with **paused** time, and that runtime's tokio clock is the
//! host's monotonic clock: `tokio::time::sleep` inside a host fires by the host's clock —
//! drift and suspend included — for every task on it, ours or a third party's
//! (docs/engine.md#hosts). The engine owns **true** time and moves it from one horizon to the
//! next: the next queued event (a fault step, a restart, a delivery), bounded by a
//! lookahead when hosts talk to each other (docs/engine.md#lookahead). Inside a slice a host's
//! runtime auto-advances from timer to timer on its own, so the engine never needs to know a
//! host's next timer — tokio offers no way to ask.
//!
//! With [`Engine::with_network`] hosts talk TCP and UDP through turmoil-net's `tokio::net`
//! shim; the engine moves their packets through true time at every fabric tick, with per-link
//! latency drawn per packet in a range (FIFO per direction), loss, cuts (partitions, both ways
//! or one), holds, injected resets and retransmission in true time (docs/engine.md#network,
//! docs/engine.md#latency-and-loss); hosts crash and start again later
//! (docs/engine.md#crash-and-start); [`transport`] gives leasesim's services and clients that
//! network as the `leasesim_net` transport they already take (docs/engine.md#transport). What
//! is left before the world runs on the engine: docs/engine.md#what-is-left.
//!
//! One OS thread runs every host's runtime in turn; nothing here reads real time, iterates a
//! hash map or draws from a thread RNG, so the same seed gives the same trace bytes.
//!
//! ```
//! use std::time::Duration;
//! use leasesim_engine::{Engine, Event, HostFault};
//!
//! let mut engine = Engine::new(7);
//! let slow = engine.add_host("slow").unwrap();
//! engine.schedule(Duration::ZERO, Event::Host(slow, HostFault::Drift(-100_000)));
//! engine
//!     .spawn(slow, async {
//!         #[allow(clippy::disallowed_methods)] // a third party's sleep, on the host's clock
//!         tokio::time::sleep(Duration::from_secs(10)).await;
//!         leasesim_engine::trace("slept 10 s");
//!     })
//!     .unwrap();
//! engine.run_until(Duration::from_secs(20)).unwrap();
//! let trace = String::from_utf8(engine.trace()).unwrap();
//! assert!(trace.contains("    11111111112 slow slept 10 s"), "{trace}");
//! ```

pub mod clock;
mod context;
mod engine;
mod host;
mod kernels;
pub mod net;
pub mod transport;

pub use context::{Trace, boottime, host, now_local, now_true, trace, try_now_true};
pub use context::{boot, local_delay, wall};
pub use engine::{Engine, EngineError, Event, HostFault};
pub use host::{Host, HostId, HostState};
pub use net::{Latency, NetConfig, NetFault, Spread};
