//! The self-test: the three reads unmodified code makes (std's wall clock, std's monotonic
//! clock, getrandom 0.4's `fill`) must reach the hooks and be answered by the source, or the
//! build cannot simulate that code (docs/targets.md#the-self-test).

use std::fmt;
use std::panic::catch_unwind;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use crate::source;
use crate::tally::{self, Channel, Counts};

/// One read the self-test makes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Read {
    /// `std::time::SystemTime::now()`: `clock_gettime(CLOCK_REALTIME)`.
    SystemTimeNow,
    /// `std::time::Instant::now()`: `clock_gettime(CLOCK_MONOTONIC)`.
    InstantNow,
    /// getrandom 0.4's `fill`: `getrandom`, found with `dlsym(RTLD_DEFAULT)`.
    GetrandomFill,
}

impl Read {
    /// Every read, in the order the self-test makes them.
    pub const ALL: [Read; 3] = [Read::SystemTimeNow, Read::InstantNow, Read::GetrandomFill];

    fn channel(self) -> Channel {
        match self {
            Read::SystemTimeNow => Channel::Wall,
            Read::InstantNow => Channel::Monotonic,
            Read::GetrandomFill => Channel::Random,
        }
    }

    /// The libc symbol the read goes through.
    pub fn symbol(self) -> &'static str {
        match self {
            Read::SystemTimeNow | Read::InstantNow => "clock_gettime",
            Read::GetrandomFill => "getrandom",
        }
    }

    /// Why a build's read of this kind misses the hook, and what to do about it.
    pub fn why_missed(self) -> &'static str {
        match self {
            Read::SystemTimeNow | Read::InstantNow => {
                "std reads the clock through the libc symbol, which misses the interposer's \
                 definition when the binary is linked against musl (not supported: build for \
                 a *-linux-gnu target) or when the linker dropped the hooks (LTO or a linker \
                 script: `nm <binary> | grep clock_gettime` must show a `T` symbol)"
            }
            Read::GetrandomFill => {
                "getrandom 0.4 finds `getrandom` with dlsym(RTLD_DEFAULT): a static glibc build \
                 (-C target-feature=+crt-static) has no dynamic symbol table to search, so it \
                 falls back to /dev/urandom; a musl build links libc's `getrandom` directly; or \
                 LTO dropped the hook. Build dynamically linked against glibc"
            }
        }
    }
}

impl fmt::Display for Read {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Read::SystemTimeNow => "std::time::SystemTime::now()",
            Read::InstantNow => "std::time::Instant::now()",
            Read::GetrandomFill => "getrandom::fill (getrandom 0.4)",
        })
    }
}

/// Why a read is not simulated in this process.
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
pub enum SelfTestError {
    /// No source is installed.
    #[error(
        "no interposer source is installed: call leasesim_interposer::install before the self-test"
    )]
    NoSource,
    /// The read never reached the hook: this build cannot simulate it.
    #[error("{read} is not simulated: it did not reach the interposer's `{}`. {}", read.symbol(), read.why_missed())]
    NotReached {
        /// The read.
        read: Read,
    },
    /// The read reached the hook, but the source did not answer on this thread.
    #[error(
        "{read} is not simulated: it reached the interposer's `{}`, but the source did not answer on this thread. Run the self-test where the source answers (inside a simulated host)",
        read.symbol()
    )]
    NotAnswered {
        /// The read.
        read: Read,
    },
    /// The source answered, but the read returned something else.
    #[error(
        "{read} is not simulated: the interposer's `{}` answered {answered}, but the read returned {returned}",
        read.symbol()
    )]
    Mismatch {
        /// The read.
        read: Read,
        /// What the hook handed out.
        answered: String,
        /// What the read returned.
        returned: String,
    },
    /// The read failed or panicked (a source that panicked, or a value out of range).
    #[error("{read} failed: {reason}")]
    ReadFailed {
        /// The read.
        read: Read,
        /// What failed.
        reason: String,
    },
}

/// Checks, on the calling thread, that `SystemTime::now()`, `Instant::now()` and getrandom
/// 0.4's `fill` reach the hooks and get the source's answers. Call it where the source answers
/// (inside a simulated host); a target world refuses to start when it fails.
///
/// # Errors
/// The first read that is not simulated, naming why builds miss it ([`SelfTestError`]).
pub fn self_test() -> Result<(), SelfTestError> {
    if !source::installed() {
        return Err(SelfTestError::NoSource);
    }
    Read::ALL.into_iter().try_for_each(check)
}

/// Makes `read` and judges it by this thread's counts and the hook's last answer.
fn check(read: Read) -> Result<(), SelfTestError> {
    let before = tally::counts(read.channel());
    let returned = make(read)?;
    judge(read, before, tally::counts(read.channel()))?;
    let answered = match read {
        Read::SystemTimeNow => Some(tally::last_wall().as_nanos()),
        // An Instant is opaque: the count is the evidence.
        Read::InstantNow => None,
        Read::GetrandomFill => Some(u128::from(tally::last_random())),
    };
    compare(read, answered, returned)
}

/// Makes `read`: the wall time in nanoseconds since the epoch, the digest of the random bytes,
/// or nothing for `Instant::now()`.
fn make(read: Read) -> Result<Option<u128>, SelfTestError> {
    let failed = |reason: String| SelfTestError::ReadFailed { read, reason };
    // std panics when `clock_gettime` fails (a source that panicked or answered out of range).
    let made = catch_unwind(|| match read {
        Read::SystemTimeNow => Ok(Some(since_epoch(SystemTime::now()).as_nanos())),
        Read::InstantNow => {
            std::hint::black_box(Instant::now());
            Ok(None)
        }
        Read::GetrandomFill => {
            let mut bytes = [0u8; 16];
            getrandom::fill(&mut bytes).map_err(|e| e.to_string())?;
            Ok(Some(u128::from(tally::digest(&bytes))))
        }
    });
    match made {
        Ok(Ok(value)) => Ok(value),
        Ok(Err(reason)) => Err(failed(reason)),
        Err(_) => Err(failed(
            "the read panicked (see the message above)".to_owned(),
        )),
    }
}

/// The time since the epoch; a time before it (which the hook cannot answer) reads as zero.
fn since_epoch(time: SystemTime) -> Duration {
    time.duration_since(UNIX_EPOCH).unwrap_or_default()
}

/// Whether a read reached the hook and was answered, from this thread's counts before and
/// after it.
pub(crate) fn judge(read: Read, before: Counts, after: Counts) -> Result<(), SelfTestError> {
    if after.reached == before.reached {
        Err(SelfTestError::NotReached { read })
    } else if after.answered == before.answered {
        Err(SelfTestError::NotAnswered { read })
    } else {
        Ok(())
    }
}

/// Whether the read returned what the hook answered last (when the read's value is visible).
pub(crate) fn compare(
    read: Read,
    answered: Option<u128>,
    returned: Option<u128>,
) -> Result<(), SelfTestError> {
    match (answered, returned) {
        (Some(answered), Some(returned)) if answered != returned => {
            let show = |value: u128| match read {
                Read::GetrandomFill => format!("bytes of digest {value:#x}"),
                _ => format!("{value} ns since the epoch"),
            };
            Err(SelfTestError::Mismatch {
                read,
                answered: show(answered),
                returned: show(returned),
            })
        }
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const BEFORE: Counts = Counts {
        reached: 4,
        answered: 2,
    };

    #[test]
    fn without_a_source_the_self_test_says_to_install_one() {
        assert_eq!(self_test(), Err(SelfTestError::NoSource));
    }

    #[test]
    fn a_read_that_never_reached_the_hook_names_why_builds_miss_it() {
        let error = judge(Read::GetrandomFill, BEFORE, BEFORE).unwrap_err();
        assert_eq!(
            error,
            SelfTestError::NotReached {
                read: Read::GetrandomFill
            }
        );
        let message = error.to_string();
        for why in ["static glibc", "/dev/urandom", "musl", "LTO"] {
            assert!(message.contains(why), "{message:?} does not say {why:?}");
        }
        let clock = judge(Read::InstantNow, BEFORE, BEFORE).unwrap_err();
        assert!(clock.to_string().contains("`clock_gettime`"), "{clock}");
        assert!(clock.to_string().contains("musl"), "{clock}");
    }

    #[test]
    fn a_read_the_source_declined_is_not_answered() {
        let after = Counts {
            reached: 5,
            answered: 2,
        };
        assert_eq!(
            judge(Read::SystemTimeNow, BEFORE, after),
            Err(SelfTestError::NotAnswered {
                read: Read::SystemTimeNow
            })
        );
        let answered = Counts {
            reached: 5,
            answered: 3,
        };
        assert_eq!(judge(Read::SystemTimeNow, BEFORE, answered), Ok(()));
    }

    #[test]
    fn a_value_other_than_the_hooks_answer_is_a_mismatch() {
        let error = compare(Read::SystemTimeNow, Some(7), Some(8)).unwrap_err();
        assert_eq!(
            error.to_string(),
            "std::time::SystemTime::now() is not simulated: the interposer's `clock_gettime` \
             answered 7 ns since the epoch, but the read returned 8 ns since the epoch"
        );
        assert_eq!(compare(Read::SystemTimeNow, Some(7), Some(7)), Ok(()));
        assert_eq!(compare(Read::InstantNow, None, None), Ok(()));
    }
}
