//! The trace of a run (`trace.jsonl`): tracing events as JSON lines stamped with true
//! simulated time, collected in memory by the runner. The nemesis stamps what it logs from
//! outside every host with [`set_trace_now`].

use std::io::Write;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// The trace: JSON lines stamped with true simulated time, from leasesim's own events only
/// (tonic and h2 events carry nothing a reviewer needs, and some are not stable across
/// versions). `RUST_LOG` overrides the filter.
pub(crate) fn trace_subscriber(writer: TraceBuffer) -> impl tracing::Subscriber + Send + Sync {
    use tracing_subscriber::EnvFilter;
    let filter =
        EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("leasesim=debug"));
    tracing_subscriber::fmt()
        .json()
        .with_env_filter(filter)
        .with_timer(SimTime)
        .with_current_span(false)
        .with_span_list(false)
        .with_writer(move || writer.clone())
        .finish()
}

thread_local! {
    /// True simulated time of the step the harness is taking outside any host (the nemesis
    /// applying a fault): turmoil only knows the time inside a host.
    static HARNESS_NOW: std::cell::Cell<Option<Duration>> = const { std::cell::Cell::new(None) };
}

/// Stamps the trace events the harness logs from now on, outside any host, with true
/// simulated time `now` (the nemesis calls it before each action it logs).
pub(crate) fn set_trace_now(now: Duration) {
    HARNESS_NOW.with(|cell| cell.set(Some(now)));
}

/// Stamps events with true simulated time, µs: inside a host turmoil's or the engine's
/// ([`super::true_time::try_true_now`]), outside one (the
/// nemesis) the harness's step ([`set_trace_now`]); `-` before the world starts.
struct SimTime;

impl tracing_subscriber::fmt::time::FormatTime for SimTime {
    fn format_time(&self, w: &mut tracing_subscriber::fmt::format::Writer<'_>) -> std::fmt::Result {
        match super::true_time::try_true_now().or_else(|| HARNESS_NOW.with(std::cell::Cell::get)) {
            Some(elapsed) => write!(w, "{}us", elapsed.as_micros()),
            None => write!(w, "-"),
        }
    }
}

/// An in-memory writer shared by the subscriber and the runner.
#[derive(Clone, Default)]
pub(crate) struct TraceBuffer(Arc<Mutex<Vec<u8>>>);

impl TraceBuffer {
    pub(crate) fn take(&self) -> Vec<u8> {
        std::mem::take(&mut *self.0.lock().unwrap_or_else(|p| p.into_inner()))
    }
}

impl Write for TraceBuffer {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}
