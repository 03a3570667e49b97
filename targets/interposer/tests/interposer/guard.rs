//! The re-entrancy guard, and a source that panics.

use std::time::{Duration, SystemTime};

use crate::source::{
    Mode, WALL_START, answering, errno, inner_wall, libc_clock, near, raw_clock, since_epoch,
};

#[test]
fn a_source_that_reads_the_clock_itself_gets_the_real_clock() {
    answering(Mode::Reentrant, || {
        assert_eq!(since_epoch(SystemTime::now()), WALL_START);
        let inner = inner_wall().expect("the source read the wall clock");
        assert!(
            near(
                inner,
                raw_clock(libc::CLOCK_REALTIME),
                Duration::from_secs(5)
            ),
            "the source's own read {inner:?} is not the real wall clock"
        );
    });
}

#[test]
fn a_panicking_source_fails_the_read_instead_of_unwinding_through_libc() {
    answering(Mode::Panicking, || {
        assert_eq!(libc_clock(libc::CLOCK_REALTIME), Err(libc::ENOTRECOVERABLE));
        let mut buf = [0u8; 8];
        // SAFETY: a valid buffer.
        let drawn = unsafe { libc::getrandom(buf.as_mut_ptr().cast(), buf.len(), 0) };
        assert_eq!((drawn, errno()), (-1, libc::ENOTRECOVERABLE));
    });
    answering(Mode::Answer, || {
        assert_eq!(
            libc_clock(libc::CLOCK_REALTIME),
            Ok(WALL_START),
            "the guard was released after the panic"
        );
    });
}
