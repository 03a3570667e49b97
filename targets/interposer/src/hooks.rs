//! The libc symbols this crate defines. Linked into an executable, they replace glibc's for
//! every caller that goes through the symbol (std, and through it tokio, jiff, chrono; getrandom
//! 0.3/0.4 through `dlsym(RTLD_DEFAULT)`): each asks the installed source and otherwise forwards
//! to the next definition (docs/targets.md#the-interposer).
//!
//! Nothing here panics: the source is asked under `catch_unwind`, and every conversion is
//! checked. Errors are libc's: `-1` and `errno`.

use std::ffi::c_void;
use std::time::Duration;

use libc::{c_int, c_uint, clockid_t, size_t, ssize_t, timespec, timeval};

use crate::real;
use crate::source::{self, Answer, ClockKind};
use crate::tally::{self, Channel};

/// The flags `getrandom(2)` knows; a call with any other bit is the real function's to refuse.
const GETRANDOM_FLAGS: c_uint = libc::GRND_NONBLOCK | libc::GRND_RANDOM | libc::GRND_INSECURE;

/// See `clock_gettime(2)`. Wall and monotonic clocks ([`ClockKind::of`]) are asked of the
/// source; everything else, and every read the source declines, is forwarded.
///
/// # Safety
/// `tp` as for libc's `clock_gettime`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn clock_gettime(clock: clockid_t, tp: *mut timespec) -> c_int {
    let Some(kind) = ClockKind::of(clock).filter(|_| !tp.is_null()) else {
        // SAFETY: the caller's arguments, unchanged.
        return unsafe { real::clock_gettime(clock, tp) };
    };
    tally::reached(kind.into());
    match source::now(kind) {
        // SAFETY: the caller's arguments, unchanged.
        Answer::Forward => unsafe { real::clock_gettime(clock, tp) },
        Answer::Failed => fail(libc::ENOTRECOVERABLE),
        Answer::Answered(now) => match timespec_of(now) {
            Some(ts) => {
                tally::answered(kind.into());
                if kind == ClockKind::Wall {
                    tally::answered_wall(now);
                }
                // SAFETY: non-null, and the caller's to write as libc would.
                unsafe { tp.write(ts) };
                0
            }
            None => fail(libc::EOVERFLOW),
        },
    }
}

/// See `gettimeofday(2)`: the wall clock, in microseconds; `tz`, when given, is zeroed as
/// glibc does.
///
/// # Safety
/// `tv` and `tz` as for libc's `gettimeofday`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn gettimeofday(tv: *mut timeval, tz: *mut c_void) -> c_int {
    tally::reached(Channel::Wall);
    match source::now(ClockKind::Wall) {
        // SAFETY: the caller's arguments, unchanged.
        Answer::Forward => unsafe { real::gettimeofday(tv, tz) },
        Answer::Failed => fail(libc::ENOTRECOVERABLE),
        Answer::Answered(now) => match timespec_of(now) {
            Some(ts) => {
                tally::answered_wall(now);
                // SAFETY: the caller's pointers, as glibc would write them.
                unsafe { write_timeofday(tv, tz, &ts) };
                0
            }
            None => fail(libc::EOVERFLOW),
        },
    }
}

/// See `getrandom(2)`: the whole buffer from the source, or forwarded (also for unknown flags,
/// which the real function refuses with `EINVAL`).
///
/// # Safety
/// `buf` as for libc's `getrandom`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn getrandom(buf: *mut c_void, len: size_t, flags: c_uint) -> ssize_t {
    tally::reached(Channel::Random);
    let Ok(answered) = ssize_t::try_from(len) else {
        // SAFETY: the caller's arguments, unchanged.
        return unsafe { real::getrandom(buf, len, flags) };
    };
    if flags & !GETRANDOM_FLAGS != 0 || (buf.is_null() && len > 0) {
        // SAFETY: the caller's arguments, unchanged.
        return unsafe { real::getrandom(buf, len, flags) };
    }
    // SAFETY: non-null when `len > 0`; the caller's `len` bytes to write.
    match unsafe { fill(buf, len) } {
        // SAFETY: the caller's arguments, unchanged.
        Answer::Forward => unsafe { real::getrandom(buf, len, flags) },
        Answer::Failed => fail(libc::ENOTRECOVERABLE) as ssize_t,
        Answer::Answered(()) => answered,
    }
}

/// See `getentropy(3)`: at most 256 bytes from the source, or forwarded (also for longer
/// requests, which the real function refuses with `EIO`).
///
/// # Safety
/// `buf` as for libc's `getentropy`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn getentropy(buf: *mut c_void, len: size_t) -> c_int {
    tally::reached(Channel::Random);
    if len > 256 || (buf.is_null() && len > 0) {
        // SAFETY: the caller's arguments, unchanged.
        return unsafe { real::getentropy(buf, len) };
    }
    // SAFETY: non-null when `len > 0`; the caller's `len` bytes to write.
    match unsafe { fill(buf, len) } {
        // SAFETY: the caller's arguments, unchanged.
        Answer::Forward => unsafe { real::getentropy(buf, len) },
        Answer::Failed => fail(libc::ENOTRECOVERABLE),
        Answer::Answered(()) => 0,
    }
}

/// Asks the source to fill `len` bytes at `buf`.
///
/// # Safety
/// `buf` valid for `len` bytes of writes when `len > 0`.
unsafe fn fill(buf: *mut c_void, len: size_t) -> Answer<()> {
    let bytes: &mut [u8] = if len == 0 {
        &mut []
    } else {
        // SAFETY: the caller's promise.
        unsafe { std::slice::from_raw_parts_mut(buf.cast::<u8>(), len) }
    };
    let answer = source::fill_random(bytes);
    if let Answer::Answered(()) = answer {
        tally::answered_random(bytes);
    }
    answer
}

/// `now` as a `timespec`, or `None` when its seconds do not fit `time_t`.
fn timespec_of(now: Duration) -> Option<timespec> {
    Some(timespec {
        tv_sec: libc::time_t::try_from(now.as_secs()).ok()?,
        // Below 10^9: fits every `c_long`.
        tv_nsec: now.subsec_nanos() as libc::c_long,
    })
}

/// Writes `now` into `gettimeofday`'s out-parameters, each when non-null (the time zone as
/// glibc gives it: zero).
///
/// # Safety
/// `tv` and `tz` null or valid for writes.
pub(crate) unsafe fn write_timeofday(tv: *mut timeval, tz: *mut c_void, now: &timespec) {
    if !tv.is_null() {
        let time = timeval {
            tv_sec: now.tv_sec,
            tv_usec: (now.tv_nsec / 1000) as libc::suseconds_t,
        };
        // SAFETY: the caller's promise.
        unsafe { tv.write(time) };
    }
    if !tz.is_null() {
        // SAFETY: the caller's promise; `struct timezone` is `{ int tz_minuteswest; int
        // tz_dsttime; }` (the libc crate keeps it opaque).
        unsafe { tz.cast::<[c_int; 2]>().write([0, 0]) };
    }
}

/// Sets `errno` as a libc function does on failure.
pub(crate) fn set_errno(code: c_int) {
    // SAFETY: this thread's errno.
    unsafe { *libc::__errno_location() = code };
}

/// Fails a read as libc does: `errno` set, `-1` returned.
fn fail(code: c_int) -> c_int {
    set_errno(code);
    -1
}
