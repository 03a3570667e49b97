//! What code running on a host can ask the engine: which host it is on, its clocks in true
//! time, and the trace (docs/engine.md#hosts).
//!
//! The engine sets the current host for the length of each slice it runs (one OS thread runs
//! every host in turn, so a thread-local is exact). The host's tokio clock *is* its monotonic
//! clock; these functions map a reading of it to true time through the host's clock segment,
//! which does not change inside a slice.

use std::cell::RefCell;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::clock::HostClock;
use crate::host::HostId;

/// The engine's trace: one line per record, `<true ns> <host> <text>`, in the order the
/// records were made (which a seed fixes).
#[derive(Clone, Debug, Default)]
pub struct Trace(Arc<Mutex<Vec<u8>>>);

impl Trace {
    /// Appends one line.
    pub fn record(&self, at_true: Duration, host: &str, text: &str) {
        let line = format!("{:>15} {host} {text}\n", at_true.as_nanos());
        self.lock().extend_from_slice(line.as_bytes());
    }

    /// Every line so far.
    pub fn bytes(&self) -> Vec<u8> {
        self.lock().clone()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<u8>> {
        // A panic while holding this lock cannot leave a half-written line (one extend).
        self.0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// The current slice's host.
#[derive(Clone, Debug)]
pub(crate) struct Current {
    pub(crate) id: HostId,
    pub(crate) name: Arc<str>,
    pub(crate) clock: HostClock,
    /// The tokio instant at which the host's runtime started, and its monotonic reading then.
    #[allow(clippy::disallowed_types, reason = "the host's own paused tokio clock")]
    pub(crate) origin: (tokio::time::Instant, Duration),
    pub(crate) trace: Trace,
}

thread_local! {
    static CURRENT: RefCell<Option<Current>> = const { RefCell::new(None) };
}

/// Sets the current host until the guard drops.
pub(crate) fn enter(current: Current) -> Entered {
    CURRENT.with(|c| *c.borrow_mut() = Some(current));
    Entered(())
}

/// Clears the current host on drop.
pub(crate) struct Entered(());

impl Drop for Entered {
    fn drop(&mut self) {
        CURRENT.with(|c| *c.borrow_mut() = None);
    }
}

fn with<T>(what: &str, f: impl FnOnce(&Current) -> T) -> T {
    CURRENT.with(|c| match &*c.borrow() {
        Some(current) => f(current),
        None => panic!(
            "leasesim_engine::{what} was called outside an engine host: call it from a task \
             spawned with Engine::spawn (docs/engine.md#hosts)"
        ),
    })
}

/// The host's monotonic reading: its reading when the runtime started plus the runtime's
/// tokio clock since.
#[allow(clippy::disallowed_types, reason = "the host's own paused tokio clock")]
fn local(current: &Current) -> Duration {
    let (start, at_start) = current.origin;
    at_start + tokio::time::Instant::now().saturating_duration_since(start)
}

/// The host this code runs on.
///
/// # Panics
/// Outside a task of an engine host.
pub fn host() -> HostId {
    with("host", |c| c.id)
}

/// The host's monotonic reading (its `tokio::time::Instant::now()` mapped to the host's
/// clock).
///
/// # Panics
/// Outside a task of an engine host.
pub fn now_local() -> Duration {
    with("now_local", local)
}

/// The true simulated time now: the earliest true time at which the host's monotonic clock
/// read what it reads now (exact to the nanosecond).
///
/// # Panics
/// Outside a task of an engine host.
pub fn now_true() -> Duration {
    with("now_true", |c| {
        c.clock
            .true_at(local(c))
            .expect("a host runs no task while suspended")
    })
}

/// The true simulated time now on the engine host whose task calls it (as [`now_true`]), or
/// `None` outside every engine host: for code that also runs outside the engine, such as the
/// world's recorder and trace (docs/engine.md#hosts).
pub fn try_now_true() -> Option<Duration> {
    CURRENT.with(|c| {
        let current = c.borrow();
        let current = current.as_ref()?;
        current.clock.true_at(local(current))
    })
}

/// How far the host's tokio clock must move from now for `true_delay` of true time to pass,
/// at the drift of its current clock segment, rounded up to the nanosecond: what a harness
/// timer on true time sleeps on a host whose tokio clock is its own (docs/engine.md#hosts).
/// A drift change during the sleep is not foreseen: sleep again on what is left. While the
/// host is suspended (no task runs then) it is `true_delay`.
///
/// # Panics
/// Outside a task of an engine host.
pub fn local_delay(true_delay: Duration) -> Duration {
    with("local_delay", |c| {
        let now_local = local(c);
        let Some(now) = c.clock.true_at(now_local) else {
            return true_delay;
        };
        let target = now.saturating_add(true_delay);
        let mut reading = c.clock.local_at(target);
        if c.clock.true_at(reading).is_some_and(|at| at < target) {
            reading += Duration::from_nanos(1);
        }
        reading.saturating_sub(now_local)
    })
}

/// The host's boot-time reading (`CLOCK_BOOTTIME`: monotonic plus time suspended).
///
/// # Panics
/// Outside a task of an engine host.
pub fn boottime() -> Duration {
    with("boottime", |c| {
        let t = c.clock.true_at(local(c)).expect("not suspended");
        c.clock.boottime_at(t)
    })
}

/// The host's wall reading (`CLOCK_REALTIME`), in ns since the Unix epoch: its monotonic
/// reading plus the boot's wall epoch plus the step offset (docs/engine.md#wall-clocks-and-reboots).
/// Negative before 1970, as a wall clock stepped far back can read.
///
/// # Panics
/// Outside a task of an engine host.
pub fn wall() -> i128 {
    with("wall", |c| c.clock.wall_for(local(c)))
}

/// Which boot of its machine the host is in: 0 at the start, one more at each
/// [`crate::Engine::reboot`].
///
/// # Panics
/// Outside a task of an engine host.
pub fn boot() -> u64 {
    with("boot", |c| c.clock.boot())
}

/// Writes `text` to the engine's trace at the true time now, under the host's name.
///
/// # Panics
/// Outside a task of an engine host.
pub fn trace(text: &str) {
    with("trace", |c| {
        let t = c.clock.true_at(local(c)).expect("not suspended");
        c.trace.record(t, &c.name, text);
    });
}
