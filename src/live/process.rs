//! What every process of a live run starts with: the run's true time ([`TrueClock`], from
//! [`super::truth::EPOCH_ENV`]), the drift it was started at ([`DRIFT_ENV`]), and its line
//! file with the first `clock` line.

use std::path::Path;
use std::sync::Arc;

use super::lines::LineFile;
use super::truth::TrueClock;
use crate::clock::Clock;
use crate::sim::clock::{MAX_DRIFT_PPM, MIN_DRIFT_PPM};
use crate::sim::record::Recorder;

/// The environment variable that tells a child the rate its clock runs at under libfaketime,
/// in ppm (a whole number; unset: 0). It only labels the process's `clock` line: the drift
/// itself is libfaketime's.
pub const DRIFT_ENV: &str = "LEASESIM_LIVE_DRIFT_PPM";

/// The drift from [`DRIFT_ENV`], 0 when it is unset.
///
/// # Errors
/// A message naming the variable when it is not a whole number within
/// [`MIN_DRIFT_PPM`]`..=`[`MAX_DRIFT_PPM`].
pub fn drift_from_env() -> Result<i64, String> {
    match std::env::var(DRIFT_ENV) {
        Err(_) => Ok(0),
        Ok(text) => parse_drift(&text),
    }
}

/// As [`drift_from_env`], from the variable's text.
///
/// # Errors
/// As [`drift_from_env`].
pub fn parse_drift(text: &str) -> Result<i64, String> {
    let bad = || {
        format!(
            "{DRIFT_ENV} is `{text}`: it must be a whole number of ppm within \
             {MIN_DRIFT_PPM}..={MAX_DRIFT_PPM} (or unset for 0)"
        )
    };
    let drift: i64 = text.trim().parse().map_err(|_| bad())?;
    if !(MIN_DRIFT_PPM..=MAX_DRIFT_PPM).contains(&drift) {
        return Err(bad());
    }
    Ok(drift)
}

/// A live process's start: true time and drift from the environment.
#[derive(Clone, Copy, Debug)]
pub struct LiveStart {
    /// The run's true time.
    pub truth: TrueClock,
    /// The rate the process runs at, ppm.
    pub drift_ppm: i64,
}

impl LiveStart {
    /// Reads [`super::truth::EPOCH_ENV`] (required) and [`DRIFT_ENV`] (optional).
    ///
    /// # Errors
    /// A message saying which variable is wrong and how to set it.
    pub fn from_env() -> Result<Self, String> {
        let truth = TrueClock::from_env().map_err(|e| e.to_string())?;
        Ok(LiveStart {
            truth,
            drift_ppm: drift_from_env()?,
        })
    }

    /// Creates the process's file `history` (it must not exist) and a live recorder on it,
    /// whose first line is the `clock` line of `host`'s boot `boot`, read on `clock` (the
    /// process's one monotonic clock).
    ///
    /// # Errors
    /// A message naming the file when it exists or cannot be created.
    pub fn recorder(
        &self,
        history: &Path,
        host: &str,
        boot: u64,
        clock: &Arc<dyn Clock>,
    ) -> Result<Recorder, String> {
        let file = LineFile::create(history).map_err(|e| {
            format!("--history: {e} (every process incarnation writes a new file of its own)")
        })?;
        let recorder = Recorder::live(file, self.truth);
        recorder.clock_started(host, boot, clock.now(), self.drift_ppm);
        Ok(recorder)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_drift_is_a_whole_number_of_ppm_within_the_clock_bounds() {
        assert_eq!(parse_drift("250"), Ok(250));
        assert_eq!(parse_drift("-100"), Ok(-100));
        assert!(parse_drift("fast").unwrap_err().contains(DRIFT_ENV));
        assert!(parse_drift("-1000000").is_err());
    }
}
