//! The interposer: simulated time and randomness for code nobody here wrote
//! (docs/targets.md#the-interposer).
//!
//! Linked into an executable, this crate defines the libc symbols `clock_gettime`,
//! `gettimeofday`, `getrandom` and `getentropy` ([`hooks`]). Every read through them first asks
//! the process's [`Source`] (installed once with [`install`]); when the source answers `None` /
//! `false` ("not mine"), or none is installed, the read goes to the real function: the next
//! definition of the symbol (`dlsym(RTLD_NEXT)`, so an LD_PRELOADed libfaketime still answers),
//! or a raw system call in a static build. Which reads this reaches and which it cannot is the
//! table in docs/targets.md#what-is-and-is-not-virtualized; Linux with glibc only.
//!
//! Link it only into the targets binary, never into `leasesim`: its definitions replace
//! glibc's for the whole executable. [`self_test`] proves, where the source answers, that this
//! build's reads reach it.
//!
//! **Hazard: timed waits.** std computes the deadline of `Condvar::wait_timeout`,
//! `thread::park_timeout` and `mpsc::Receiver::recv_timeout` from `CLOCK_MONOTONIC` and the
//! kernel compares it with the *real* clock. On a thread whose monotonic clock the source
//! answers ahead of real time, such a wait blocks far too long (a 50 ms wait was still blocked
//! after 3 s); behind it, it times out at once. `thread::sleep` is relative and unaffected, and
//! tokio's paused runtime never waits on a futex deadline. Never make a std timed wait on a
//! thread the source answers (docs/targets.md#timed-waits).
//!
//! ```ignore
//! use leasesim_interposer::{ClockKind, Source};
//! leasesim_interposer::install(Source {
//!     now: |kind: ClockKind| world_clock(kind),   // None off the world's threads
//!     fill_random: |buf: &mut [u8]| world_random(buf),
//! })?;
//! ```

pub mod hooks;
mod real;
mod self_test;
mod source;
mod tally;

pub use self_test::{Read, SelfTestError, self_test};
pub use source::{AlreadyInstalled, ClockKind, Source, install, installed};
