//! On a thread the source answers, every clock reader unmodified code uses reads the source.

use std::time::{Duration, Instant, SystemTime};

use crate::source::{
    MONO_START, Mode, WALL_START, advance_monotonic, answering, libc_clock, set_wall, since_epoch,
};

#[test]
fn system_time_now_reads_the_sources_wall_clock() {
    answering(Mode::Answer, || {
        assert_eq!(since_epoch(SystemTime::now()), WALL_START);
        set_wall(WALL_START + Duration::from_secs(90));
        assert_eq!(
            since_epoch(SystemTime::now()),
            WALL_START + Duration::from_secs(90)
        );
    });
}

#[test]
fn instant_now_reads_the_sources_monotonic_clock() {
    answering(Mode::Answer, || {
        let first = Instant::now();
        assert_eq!(Instant::now(), first, "the source's clock has not moved");
        advance_monotonic(Duration::from_millis(5_250));
        assert_eq!(Instant::now() - first, Duration::from_millis(5_250));
    });
}

#[test]
fn jiff_timestamp_now_reads_the_sources_wall_clock() {
    answering(Mode::Answer, || {
        let now = jiff::Timestamp::now();
        assert_eq!(now.as_nanosecond(), WALL_START.as_nanos() as i128);
        assert_eq!(now.to_string(), "2023-11-14T22:13:20.123456789Z");
    });
}

#[test]
fn chrono_utc_now_reads_the_sources_wall_clock() {
    answering(Mode::Answer, || {
        let now = chrono::Utc::now();
        assert_eq!(now.timestamp(), WALL_START.as_secs() as i64);
        assert_eq!(now.timestamp_subsec_nanos(), WALL_START.subsec_nanos());
    });
}

#[test]
fn libc_gettimeofday_reads_the_sources_wall_clock_in_microseconds() {
    answering(Mode::Answer, || {
        let mut tv = libc::timeval {
            tv_sec: 0,
            tv_usec: 0,
        };
        let mut tz = [0x55_i32; 2];
        // SAFETY: valid out-parameters (`struct timezone` is two ints).
        let done = unsafe { libc::gettimeofday(&mut tv, tz.as_mut_ptr().cast()) };
        assert_eq!(done, 0);
        assert_eq!(tv.tv_sec, WALL_START.as_secs() as libc::time_t);
        assert_eq!(tv.tv_usec, 123_456);
        assert_eq!(tz, [0, 0], "the time zone is zeroed, as glibc does");
    });
}

#[test]
fn coarse_raw_alarm_and_boot_clocks_are_the_same_two_simulated_clocks() {
    answering(Mode::Answer, || {
        for wall in [libc::CLOCK_REALTIME_COARSE, libc::CLOCK_REALTIME_ALARM] {
            assert_eq!(libc_clock(wall), Ok(WALL_START), "clock id {wall}");
        }
        for monotonic in [
            libc::CLOCK_MONOTONIC,
            libc::CLOCK_MONOTONIC_RAW,
            libc::CLOCK_MONOTONIC_COARSE,
            libc::CLOCK_BOOTTIME,
            libc::CLOCK_BOOTTIME_ALARM,
        ] {
            assert_eq!(
                libc_clock(monotonic),
                Ok(MONO_START),
                "clock id {monotonic}"
            );
        }
    });
}

#[test]
fn cpu_time_clocks_and_bad_clock_ids_go_to_the_real_function() {
    answering(Mode::Answer, || {
        let cpu = libc_clock(libc::CLOCK_THREAD_CPUTIME_ID).expect("this thread's CPU time");
        assert!(
            cpu < Duration::from_secs(3600),
            "this thread's real CPU time, not a simulated clock: {cpu:?}"
        );
        assert_eq!(libc_clock(12_345), Err(libc::EINVAL));
    });
}

#[test]
fn a_wall_time_beyond_time_t_fails_the_read_with_eoverflow() {
    answering(Mode::Answer, || {
        set_wall(Duration::MAX);
        assert_eq!(libc_clock(libc::CLOCK_REALTIME), Err(libc::EOVERFLOW));
    });
}
