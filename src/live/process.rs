//! What every process of a live run starts with: the run's true time ([`TrueClock`], from
//! [`super::truth::EPOCH_ENV`]), the drift it was started at ([`DRIFT_ENV`]), its line
//! file with the first `clock` line, and the signals that stop it ([`stop_signal`]).

use std::future::Future;
use std::path::Path;
use std::sync::Arc;

use super::lines::LineFile;
use super::truth::TrueClock;
use crate::clock::Clock;
use crate::history::Line;
use crate::sim::clock::{MAX_DRIFT_PPM, MIN_DRIFT_PPM};
use crate::sim::record::{LineSink, Recorder};

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
        let recorder = Recorder::live(Arc::new(ProcessFile {
            file,
            truth: self.truth,
        }));
        recorder.clock_started(host, boot, clock.now(), self.drift_ppm);
        Ok(recorder)
    }
}

/// Completes on SIGINT or SIGTERM, both handled from the moment this returns (so a signal
/// that arrives before the future is first polled is not the default kill).
///
/// # Errors
/// The signal handlers cannot be installed. Must be called inside a tokio runtime.
pub fn stop_signal() -> std::io::Result<impl Future<Output = ()> + Send> {
    use tokio::signal::unix::{SignalKind, signal};
    let mut term = signal(SignalKind::terminate())?;
    let mut interrupt = signal(SignalKind::interrupt())?;
    Ok(async move {
        tokio::select! {
            _ = term.recv() => {}
            _ = interrupt.recv() => {}
        }
    })
}

/// The sink a live process records to: its line file, stamped with the run's true time.
#[derive(Debug)]
struct ProcessFile {
    file: LineFile,
    truth: TrueClock,
}

impl LineSink for ProcessFile {
    fn now(&self) -> std::time::Duration {
        self.truth.now()
    }

    fn append(&self, line: &Line) -> std::io::Result<()> {
        self.file.append(line)
    }

    fn close(&self) -> std::io::Result<()> {
        self.file.close()
    }

    fn describe(&self) -> String {
        self.file.path().display().to_string()
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::clock::ManualClock;
    use crate::history::{HistEvent, Op, OpResult, Outcome, Process};
    use crate::lease::SessionId;
    use crate::live::lines::read_line_file;

    #[test]
    fn a_drift_is_a_whole_number_of_ppm_within_the_clock_bounds() {
        assert_eq!(parse_drift("250"), Ok(250));
        assert_eq!(parse_drift("-100"), Ok(-100));
        assert!(parse_drift("fast").unwrap_err().contains(DRIFT_ENV));
        assert!(parse_drift("-1000000").is_err());
    }

    #[test]
    fn a_live_recorder_writes_an_op_at_invocation_and_again_at_completion() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("replica-1-0.jsonl");
        let start = LiveStart {
            truth: TrueClock::start(),
            drift_ppm: 250,
        };
        let manual = ManualClock::new();
        let clock: Arc<dyn Clock> = Arc::new(manual.clone());
        let recorder = start.recorder(&path, "replica-1", 0, &clock).unwrap();
        let session = SessionId::new("s1").unwrap();
        let process = Process::new("replica-1", 0);
        let first = recorder.invoke(process.clone(), &session, Op::LedgerTip {}, &clock);
        manual.advance(Duration::from_millis(3));
        recorder.event("replica-1", HistEvent::StickyDisable);
        recorder.complete(first, Outcome::Ok, OpResult::Tip { seq: 4 });
        let second = recorder.invoke(process, &session, Op::LedgerTip {}, &clock);
        recorder.close().unwrap();
        drop(second);

        let lines = read_line_file(&path).unwrap().lines;
        let [
            Line::Clock(clock_line),
            Line::Op(invoked),
            Line::Event(_),
            Line::Op(done),
            Line::Op(pending),
        ] = &lines[..]
        else {
            panic!("unexpected lines: {lines:?}");
        };
        assert_eq!(
            (clock_line.host.as_str(), clock_line.drift_ppm),
            ("replica-1", 250)
        );
        assert_eq!(
            (invoked.id, done.id, pending.id),
            (1, 1, 2),
            "ids count from 1"
        );
        assert!(invoked.is_pending() && pending.is_pending());
        assert_eq!(done.result, Some(OpResult::Tip { seq: 4 }));
        assert_eq!(done.invoke_us, invoked.invoke_us);
        assert_eq!(
            done.complete_local_us,
            Some(3_000),
            "timed on the local clock"
        );
        assert_eq!(
            recorder.finish(0).len(),
            1,
            "a live recorder keeps only its pending operation in memory"
        );
    }
}
