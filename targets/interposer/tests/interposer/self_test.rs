//! The self-test, where the source answers and where it does not.

use leasesim_interposer::{AlreadyInstalled, Read, SelfTestError, Source, self_test};

use crate::source::{self, Mode, answering};

/// The self-test's failure when the source did not answer `read`.
fn not_answered(read: Read) -> Result<(), SelfTestError> {
    Err(SelfTestError::NotAnswered { read })
}

#[test]
fn the_self_test_passes_where_the_source_answers() {
    answering(Mode::Answer, || assert_eq!(self_test(), Ok(())));
}

#[test]
fn the_self_test_fails_on_a_thread_the_source_does_not_answer() {
    answering(Mode::Off, || {
        assert_eq!(self_test(), not_answered(Read::SystemTimeNow));
    });
}

#[test]
fn the_self_test_names_the_monotonic_read_the_source_declined() {
    answering(Mode::NoMonotonic, || {
        let result = self_test();
        assert_eq!(result, not_answered(Read::InstantNow));
        let error = result.unwrap_err();
        assert!(
            error.to_string().starts_with(
                "std::time::Instant::now() is not simulated: it reached the interposer's \
                 `clock_gettime`, but the source did not answer on this thread"
            ),
            "{error}"
        );
    });
}

#[test]
fn the_self_test_names_the_random_read_the_source_declined() {
    answering(Mode::NoRandom, || {
        assert_eq!(self_test(), not_answered(Read::GetrandomFill));
    });
}

#[test]
fn a_panicking_source_fails_the_self_test() {
    answering(Mode::Panicking, || {
        let error = self_test().unwrap_err();
        assert!(
            matches!(
                error,
                SelfTestError::ReadFailed {
                    read: Read::SystemTimeNow,
                    ..
                }
            ),
            "{error:?}"
        );
    });
}

#[test]
fn a_second_source_is_refused() {
    source::install();
    let other = Source {
        now: |_| None,
        fill_random: |_| false,
    };
    assert_eq!(leasesim_interposer::install(other), Err(AlreadyInstalled));
}
