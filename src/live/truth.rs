//! True time in live mode: the orchestrator's `CLOCK_MONOTONIC`, read by every process of a
//! run through a call libfaketime cannot intercept.
//!
//! libfaketime works by `LD_PRELOAD`: it replaces libc's `clock_gettime`, `gettimeofday` and
//! `time`, so a process started under it sees a drifting or stepped clock through `std` and
//! tokio (its *own* clock, which the system under test reads through
//! [`crate::clock::RealClock`]). rustix's Linux backend does not call libc: it reads
//! `CLOCK_MONOTONIC` through the kernel's vDSO (or the raw syscall), which the preload never
//! sees. All processes of one machine share that clock, so the orchestrator takes one reading
//! at the start of a run (the *epoch*) and hands it to every child in [`EPOCH_ENV`]; each
//! process's true time is then `CLOCK_MONOTONIC − epoch`, comparable across processes to the
//! µs, and never faked.

use std::time::Duration;

/// The environment variable that carries the run's epoch to every child: the orchestrator's
/// raw `CLOCK_MONOTONIC` reading at the start of the run, in ns, as a decimal integer.
pub const EPOCH_ENV: &str = "LEASESIM_LIVE_EPOCH_NS";

/// The raw `CLOCK_MONOTONIC` reading, in ns since an arbitrary point (the machine's boot),
/// bypassing libc (and so libfaketime).
pub fn raw_monotonic_ns() -> u128 {
    let now = rustix::time::clock_gettime(rustix::time::ClockId::Monotonic);
    // tv_sec and tv_nsec of CLOCK_MONOTONIC are never negative.
    (now.tv_sec.max(0) as u128) * 1_000_000_000 + now.tv_nsec.max(0) as u128
}

/// True time of one live run: the elapsed time since the orchestrator's epoch.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct TrueClock {
    epoch_ns: u128,
}

/// [`EPOCH_ENV`] missing or malformed.
#[derive(Clone, PartialEq, Eq, Debug, thiserror::Error)]
#[error(
    "{EPOCH_ENV} is {0}: live processes are started by `leasesim live`, which sets it to its \
     CLOCK_MONOTONIC reading in ns (to start one by hand, set it to the same value for every \
     process of the run)"
)]
pub struct EpochError(String);

impl TrueClock {
    /// A run whose epoch is now: the orchestrator's.
    pub fn start() -> Self {
        TrueClock {
            epoch_ns: raw_monotonic_ns(),
        }
    }

    /// The run's clock from [`EPOCH_ENV`]: a child's.
    ///
    /// # Errors
    /// [`EpochError`] when the variable is missing, not a whole number, or in the future.
    pub fn from_env() -> Result<Self, EpochError> {
        let text = std::env::var(EPOCH_ENV).map_err(|_| EpochError("not set".into()))?;
        Self::from_epoch_text(&text)
    }

    /// As [`TrueClock::from_env`], from the variable's text.
    ///
    /// # Errors
    /// As [`TrueClock::from_env`].
    pub fn from_epoch_text(text: &str) -> Result<Self, EpochError> {
        let epoch_ns: u128 = text
            .trim()
            .parse()
            .map_err(|_| EpochError(format!("`{text}`, not a whole number of ns")))?;
        if epoch_ns > raw_monotonic_ns() {
            return Err(EpochError(format!(
                "`{text}`, later than this machine's CLOCK_MONOTONIC: it was taken on another \
                 machine or another boot"
            )));
        }
        Ok(TrueClock { epoch_ns })
    }

    /// The epoch, as [`EPOCH_ENV`] carries it.
    pub fn epoch_text(&self) -> String {
        self.epoch_ns.to_string()
    }

    /// True time now: elapsed since the epoch.
    pub fn now(&self) -> Duration {
        let elapsed = raw_monotonic_ns().saturating_sub(self.epoch_ns);
        Duration::from_nanos(u64::try_from(elapsed).unwrap_or(u64::MAX))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_child_reads_the_same_true_time_as_the_orchestrator() {
        let orchestrator = TrueClock::start();
        let child = TrueClock::from_epoch_text(&orchestrator.epoch_text()).unwrap();
        let (a, b) = (orchestrator.now(), child.now());
        let gap = a.abs_diff(b);
        assert!(gap < Duration::from_millis(50), "{a:?} vs {b:?}");
    }

    #[test]
    fn an_epoch_that_is_not_a_number_or_in_the_future_is_refused() {
        assert!(TrueClock::from_epoch_text("soon").is_err());
        let future = (raw_monotonic_ns() + 3_600_000_000_000).to_string();
        let error = TrueClock::from_epoch_text(&future).unwrap_err().to_string();
        assert!(error.contains("later than"), "{error}");
    }
}
