//! On a thread the source does not answer, every read gets the real function.

use std::sync::{Arc, Barrier};
use std::time::{Duration, SystemTime};

use crate::source::{
    self, MONO_START, Mode, SEED, WALL_START, answering, fill_from, libc_clock, near, raw_clock,
    since_epoch,
};

/// Real clocks read twice a moment apart agree to this, even on a loaded machine.
const TOLERANCE: Duration = Duration::from_secs(5);

/// Asserts that this thread's wall and monotonic reads are the real clocks.
fn assert_real_clocks() {
    let wall = since_epoch(SystemTime::now());
    assert!(
        near(wall, raw_clock(libc::CLOCK_REALTIME), TOLERANCE),
        "SystemTime::now() {wall:?} is not the real wall clock"
    );
    assert!(!near(wall, WALL_START, TOLERANCE));
    let monotonic = libc_clock(libc::CLOCK_MONOTONIC).expect("the real monotonic clock");
    assert!(
        near(monotonic, raw_clock(libc::CLOCK_MONOTONIC), TOLERANCE),
        "clock_gettime(CLOCK_MONOTONIC) {monotonic:?} is not the real monotonic clock"
    );
    assert!(!near(monotonic, MONO_START, TOLERANCE));
}

#[test]
fn a_thread_the_source_does_not_answer_reads_the_real_clocks() {
    answering(Mode::Off, assert_real_clocks);
}

#[test]
fn a_thread_the_source_does_not_answer_draws_real_randomness() {
    answering(Mode::Off, || {
        let mut drawn = [0u8; 32];
        getrandom::fill(&mut drawn).expect("the real getrandom");
        let mut stream = [0u8; 32];
        fill_from(SEED, &mut stream);
        assert_ne!(drawn, stream, "the draw came from the source's stream");
        assert_ne!(drawn, [0u8; 32], "the buffer was not filled");
    });
}

#[test]
fn a_thread_beside_one_the_source_answers_still_reads_the_real_clocks() {
    let both_reading = Arc::new(Barrier::new(2));
    let simulated = {
        let both_reading = Arc::clone(&both_reading);
        std::thread::spawn(move || {
            answering(Mode::Answer, || {
                both_reading.wait();
                since_epoch(SystemTime::now())
            })
        })
    };
    source::install();
    both_reading.wait();
    assert_real_clocks();
    assert_eq!(simulated.join().expect("the simulated thread"), WALL_START);
}
