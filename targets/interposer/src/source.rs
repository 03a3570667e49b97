//! The source: what the world installs to answer the hooks, and the one path every hook takes
//! to ask it (docs/targets.md#the-interposer).

use std::cell::Cell;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::OnceLock;
use std::time::Duration;

/// Which clock a read asks for.
///
/// `CLOCK_REALTIME`, `CLOCK_REALTIME_COARSE` and `CLOCK_REALTIME_ALARM` are [`ClockKind::Wall`];
/// `CLOCK_MONOTONIC`, `CLOCK_MONOTONIC_RAW`, `CLOCK_MONOTONIC_COARSE`, `CLOCK_BOOTTIME` and
/// `CLOCK_BOOTTIME_ALARM` are [`ClockKind::Monotonic`]. Every other id (`CLOCK_PROCESS_CPUTIME_ID`,
/// `CLOCK_THREAD_CPUTIME_ID`, `CLOCK_TAI`, dynamic CPU and POSIX clocks, bad ids) is forwarded
/// to the real function: CPU time is not the world's to simulate, and a bad id's `EINVAL` is the
/// real function's answer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ClockKind {
    /// The wall clock: the answer is the time since the Unix epoch.
    Wall,
    /// A monotonic clock: the answer is the time since boot.
    Monotonic,
}

impl ClockKind {
    /// The kind of a libc clock id, or `None` for a clock the interposer forwards.
    pub fn of(clock: libc::clockid_t) -> Option<ClockKind> {
        match clock {
            libc::CLOCK_REALTIME | libc::CLOCK_REALTIME_COARSE | libc::CLOCK_REALTIME_ALARM => {
                Some(ClockKind::Wall)
            }
            libc::CLOCK_MONOTONIC
            | libc::CLOCK_MONOTONIC_RAW
            | libc::CLOCK_MONOTONIC_COARSE
            | libc::CLOCK_BOOTTIME
            | libc::CLOCK_BOOTTIME_ALARM => Some(ClockKind::Monotonic),
            _ => None,
        }
    }
}

/// What the hooks ask before forwarding to the real functions. Plain function pointers: the
/// hooks run inside every clock read of the process, so asking must not allocate or lock.
///
/// Each function is called with the interposer's re-entrancy guard set: a clock or entropy
/// read it makes itself (directly or through a library) gets the real function. A panic in
/// either is caught at the hook: the panic hook reports it and the read fails (`-1`,
/// `errno = ENOTRECOVERABLE`), so the reader (std's `SystemTime::now`, rand) fails loudly on its
/// own side instead of going on with real values (with `panic = "abort"` the process aborts).
#[derive(Clone, Copy, Debug)]
pub struct Source {
    /// The simulated time of `kind` on the calling thread, or `None` for "not mine: forward
    /// to the real clock". A value whose seconds do not fit `time_t` fails the read with
    /// `EOVERFLOW`.
    pub now: fn(ClockKind) -> Option<Duration>,
    /// Fills the buffer with the calling thread's simulated randomness and returns `true`, or
    /// returns `false` for "not mine: forward to the real `getrandom`/`getentropy`".
    pub fill_random: fn(&mut [u8]) -> bool,
}

/// [`install`] was called a second time in this process.
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
#[error(
    "an interposer source is already installed in this process: install one source, once, at start-up"
)]
pub struct AlreadyInstalled;

static SOURCE: OnceLock<Source> = OnceLock::new();

/// Installs the process's source; until then every hook forwards. Once per process: a second
/// call returns [`AlreadyInstalled`] and leaves the first source in place.
pub fn install(source: Source) -> Result<(), AlreadyInstalled> {
    SOURCE.set(source).map_err(|_| AlreadyInstalled)
}

/// Whether a source is installed.
pub fn installed() -> bool {
    SOURCE.get().is_some()
}

/// What the source said to one read.
pub(crate) enum Answer<T> {
    /// Not the source's: the hook forwards to the real function.
    Forward,
    /// The simulated value.
    Answered(T),
    /// The source panicked; the read fails.
    Failed,
}

thread_local! {
    /// Set while this thread runs a source function (the re-entrancy guard).
    static IN_SOURCE: Cell<bool> = const { Cell::new(false) };
}

/// The simulated time of `kind` on this thread.
pub(crate) fn now(kind: ClockKind) -> Answer<Duration> {
    ask(|source| (source.now)(kind))
}

/// Fills `buf` from the simulated stream of this thread.
pub(crate) fn fill_random(buf: &mut [u8]) -> Answer<()> {
    ask(|source| (source.fill_random)(buf).then_some(()))
}

/// Runs `question` against the installed source, unless there is none or this thread is
/// already inside the source (then the read is the source's own and gets the real function).
fn ask<T>(question: impl FnOnce(&Source) -> Option<T>) -> Answer<T> {
    let Some(source) = SOURCE.get() else {
        return Answer::Forward;
    };
    // `try_with`: a read during this thread's teardown, after its locals are gone, forwards.
    let Ok(false) = IN_SOURCE.try_with(|inside| inside.replace(true)) else {
        return Answer::Forward;
    };
    let answer = catch_unwind(AssertUnwindSafe(|| question(source)));
    let _ = IN_SOURCE.try_with(|inside| inside.set(false));
    match answer {
        Ok(Some(value)) => Answer::Answered(value),
        Ok(None) => Answer::Forward,
        Err(_) => Answer::Failed,
    }
}
