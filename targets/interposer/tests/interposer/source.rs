//! The test source: answers only on threads that switched it on ([`answering`]), with a wall
//! and a monotonic clock that move only when the test moves them and a SplitMix64 stream.

use std::cell::Cell;
use std::sync::Once;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use leasesim_interposer::{ClockKind, Source};

/// What the source does on this thread.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// Answers nothing: every read is forwarded.
    Off,
    /// Answers clocks and randomness.
    Answer,
    /// Answers, and reads `SystemTime::now()` itself while answering the wall clock.
    Reentrant,
    /// Answers all but the monotonic clock.
    NoMonotonic,
    /// Answers the clocks but not randomness.
    NoRandom,
    /// Panics on every read.
    Panicking,
}

/// The wall clock's first answer: 2023-11-14T22:13:20.123456789Z.
pub const WALL_START: Duration = Duration::new(1_700_000_000, 123_456_789);
/// The monotonic clock's first answer: 100 days after boot, far from this machine's uptime.
pub const MONO_START: Duration = Duration::from_secs(100 * 86_400);
/// The stream's seed unless a test gives another.
pub const SEED: u64 = 0x5EED;

thread_local! {
    static MODE: Cell<Mode> = const { Cell::new(Mode::Off) };
    static WALL: Cell<Duration> = const { Cell::new(WALL_START) };
    static MONO: Cell<Duration> = const { Cell::new(MONO_START) };
    static STREAM: Cell<u64> = const { Cell::new(SEED) };
    static INNER_WALL: Cell<Option<Duration>> = const { Cell::new(None) };
}

fn now(kind: ClockKind) -> Option<Duration> {
    match (MODE.get(), kind) {
        (Mode::Off, _) | (Mode::NoMonotonic, ClockKind::Monotonic) => None,
        (Mode::Panicking, _) => panic!("the test source panics (on purpose)"),
        (Mode::Reentrant, ClockKind::Wall) => {
            INNER_WALL.set(Some(since_epoch(SystemTime::now())));
            Some(WALL.get())
        }
        (_, ClockKind::Wall) => Some(WALL.get()),
        (_, ClockKind::Monotonic) => Some(MONO.get()),
    }
}

fn fill_random(buf: &mut [u8]) -> bool {
    match MODE.get() {
        Mode::Off | Mode::NoRandom => false,
        Mode::Panicking => panic!("the test source panics (on purpose)"),
        _ => {
            STREAM.set(fill_from(STREAM.get(), buf));
            true
        }
    }
}

/// Fills `buf` from the SplitMix64 stream at `state`, 8 little-endian bytes per draw; the new
/// state.
pub fn fill_from(mut state: u64, buf: &mut [u8]) -> u64 {
    for chunk in buf.chunks_mut(8) {
        state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        chunk.copy_from_slice(&(z ^ (z >> 31)).to_le_bytes()[..chunk.len()]);
    }
    state
}

/// The first `N` bytes of the stream a thread answered with [`SEED`] draws.
pub fn seed_stream<const N: usize>() -> [u8; N] {
    let mut stream = [0u8; N];
    fill_from(SEED, &mut stream);
    stream
}

/// Installs the test source (once per process).
pub fn install() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        leasesim_interposer::install(Source { now, fill_random })
            .expect("the test source is the process's first");
    });
}

/// Switches the source to `mode` on this thread, back to `Off` when dropped (also when an
/// assertion fails).
struct Switch;

impl Drop for Switch {
    fn drop(&mut self) {
        MODE.set(Mode::Off);
    }
}

/// Runs `f` on this thread with the source in `mode`, its clocks at their start and its
/// stream at `seed`.
pub fn answering_seeded<R>(mode: Mode, seed: u64, f: impl FnOnce() -> R) -> R {
    install();
    WALL.set(WALL_START);
    MONO.set(MONO_START);
    STREAM.set(seed);
    INNER_WALL.set(None);
    let _switch = Switch;
    MODE.set(mode);
    f()
}

/// [`answering_seeded`] with [`SEED`].
pub fn answering<R>(mode: Mode, f: impl FnOnce() -> R) -> R {
    answering_seeded(mode, SEED, f)
}

/// Runs `f` on a fresh thread the source answers from its first instruction, with `seed`.
pub fn fresh_thread<R: Send + 'static>(seed: u64, f: impl FnOnce() -> R + Send + 'static) -> R {
    std::thread::spawn(move || answering_seeded(Mode::Answer, seed, f))
        .join()
        .expect("the fresh thread finished")
}

/// Moves this thread's simulated wall clock to `since_epoch`.
pub fn set_wall(since_epoch: Duration) {
    WALL.set(since_epoch);
}

/// Moves this thread's simulated monotonic clock forward by `by`.
pub fn advance_monotonic(by: Duration) {
    MONO.set(MONO.get() + by);
}

/// What the source read of the wall clock while answering (in [`Mode::Reentrant`]).
pub fn inner_wall() -> Option<Duration> {
    INNER_WALL.get()
}

/// The time since the epoch of `time`.
pub fn since_epoch(time: SystemTime) -> Duration {
    time.duration_since(UNIX_EPOCH)
        .expect("a time after the epoch")
}

/// The real time of `clock`, by raw system call (no symbol, no vDSO: never the hooks).
pub fn raw_clock(clock: libc::clockid_t) -> Duration {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: a valid timespec.
    let done = unsafe { libc::syscall(libc::SYS_clock_gettime, clock, &mut ts) };
    assert_eq!(done, 0, "the raw clock_gettime system call");
    Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32)
}

/// `libc::clock_gettime(clock)` — the symbol, so the hook — as a duration, or the errno.
pub fn libc_clock(clock: libc::clockid_t) -> Result<Duration, i32> {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: a valid timespec.
    if unsafe { libc::clock_gettime(clock, &mut ts) } != 0 {
        return Err(errno());
    }
    Ok(Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32))
}

/// This thread's errno.
pub fn errno() -> i32 {
    std::io::Error::last_os_error()
        .raw_os_error()
        .expect("an OS error")
}

/// `a` and `b` are within `tolerance` of each other.
pub fn near(a: Duration, b: Duration, tolerance: Duration) -> bool {
    a.abs_diff(b) <= tolerance
}
