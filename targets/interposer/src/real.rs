//! The real functions: the next definition of each symbol after ours (glibc's, or an
//! LD_PRELOADed library's such as live mode's libfaketime), found with `dlsym(RTLD_NEXT)` once
//! and cached; a raw system call where there is no next definition (a static glibc build,
//! where `dlsym` answers NULL).

use std::ffi::{CStr, c_void};
use std::sync::atomic::{AtomicUsize, Ordering};

use libc::{c_int, c_uint, clockid_t, size_t, ssize_t, timespec, timeval};

/// One symbol's next definition, looked up on first use.
struct Next {
    name: &'static CStr,
    /// 0: not looked up yet; [`Next::NONE`]: there is none; otherwise its address.
    address: AtomicUsize,
}

impl Next {
    const NONE: usize = 1;

    const fn new(name: &'static CStr) -> Next {
        Next {
            name,
            address: AtomicUsize::new(0),
        }
    }

    /// The next definition's address, or `None` when there is none (static binary).
    fn get(&self) -> Option<*mut c_void> {
        let mut address = self.address.load(Ordering::Acquire);
        if address == 0 {
            // SAFETY: a NUL-terminated name; RTLD_NEXT is valid from a function in the binary.
            let found = unsafe { libc::dlsym(libc::RTLD_NEXT, self.name.as_ptr()) };
            address = if found.is_null() {
                Next::NONE
            } else {
                found as usize
            };
            // Two threads racing here store the same answer.
            self.address.store(address, Ordering::Release);
        }
        (address != Next::NONE).then_some(address as *mut c_void)
    }
}

static CLOCK_GETTIME: Next = Next::new(c"clock_gettime");
static GETTIMEOFDAY: Next = Next::new(c"gettimeofday");
static GETRANDOM: Next = Next::new(c"getrandom");
static GETENTROPY: Next = Next::new(c"getentropy");

/// glibc's limit for one `getentropy` call (larger requests fail with `EIO`).
const GETENTROPY_MAX: size_t = 256;

/// The real `clock_gettime`.
///
/// # Safety
/// `tp` as for libc's `clock_gettime`.
pub(crate) unsafe fn clock_gettime(clock: clockid_t, tp: *mut timespec) -> c_int {
    match CLOCK_GETTIME.get() {
        Some(next) => {
            // SAFETY: the next definition of `clock_gettime` has this signature.
            let next: unsafe extern "C" fn(clockid_t, *mut timespec) -> c_int =
                unsafe { std::mem::transmute(next) };
            unsafe { next(clock, tp) }
        }
        // SAFETY: the kernel checks `tp` (EFAULT).
        None => unsafe { libc::syscall(libc::SYS_clock_gettime, clock, tp) as c_int },
    }
}

/// The real `gettimeofday`.
///
/// # Safety
/// `tv` and `tz` as for libc's `gettimeofday`.
pub(crate) unsafe fn gettimeofday(tv: *mut timeval, tz: *mut c_void) -> c_int {
    if let Some(next) = GETTIMEOFDAY.get() {
        // SAFETY: the next definition of `gettimeofday` has this signature.
        let next: unsafe extern "C" fn(*mut timeval, *mut c_void) -> c_int =
            unsafe { std::mem::transmute(next) };
        return unsafe { next(tv, tz) };
    }
    let mut now = timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: a valid timespec.
    let done = unsafe { libc::syscall(libc::SYS_clock_gettime, libc::CLOCK_REALTIME, &mut now) };
    if done != 0 {
        return -1;
    }
    // SAFETY: the caller's pointers, as glibc would write them.
    unsafe { crate::hooks::write_timeofday(tv, tz, &now) };
    0
}

/// The real `getrandom`.
///
/// # Safety
/// `buf` as for libc's `getrandom`.
pub(crate) unsafe fn getrandom(buf: *mut c_void, len: size_t, flags: c_uint) -> ssize_t {
    match GETRANDOM.get() {
        Some(next) => {
            // SAFETY: the next definition of `getrandom` has this signature.
            let next: unsafe extern "C" fn(*mut c_void, size_t, c_uint) -> ssize_t =
                unsafe { std::mem::transmute(next) };
            unsafe { next(buf, len, flags) }
        }
        // SAFETY: the kernel checks `buf` (EFAULT) and `flags` (EINVAL).
        None => unsafe { libc::syscall(libc::SYS_getrandom, buf, len, flags) as ssize_t },
    }
}

/// The real `getentropy`.
///
/// # Safety
/// `buf` as for libc's `getentropy`.
pub(crate) unsafe fn getentropy(buf: *mut c_void, len: size_t) -> c_int {
    if let Some(next) = GETENTROPY.get() {
        // SAFETY: the next definition of `getentropy` has this signature.
        let next: unsafe extern "C" fn(*mut c_void, size_t) -> c_int =
            unsafe { std::mem::transmute(next) };
        return unsafe { next(buf, len) };
    }
    if len > GETENTROPY_MAX {
        crate::hooks::set_errno(libc::EIO);
        return -1;
    }
    let mut filled = 0;
    while filled < len {
        // SAFETY: within the caller's buffer.
        let got = unsafe { getrandom(buf.cast::<u8>().add(filled).cast(), len - filled, 0) };
        if got < 0 {
            if std::io::Error::last_os_error().raw_os_error() == Some(libc::EINTR) {
                continue;
            }
            return -1;
        }
        filled += got as size_t;
    }
    0
}
