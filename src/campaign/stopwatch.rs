//! Wall-clock time for the campaign's budgets, timeouts and progress: the campaign is the one
//! place outside the simulation allowed to read the real clock (docs/determinism.md#rules).
//! Nothing read here reaches a history or a hash.

// The campaign's budgets and progress are real time by definition.
#![allow(clippy::disallowed_types, clippy::disallowed_methods)]

use std::time::Duration;

/// Time since [`Stopwatch::start`].
#[derive(Clone, Copy, Debug)]
pub struct Stopwatch {
    started: std::time::Instant,
}

impl Stopwatch {
    /// Starts counting now.
    pub fn start() -> Self {
        Stopwatch {
            started: std::time::Instant::now(),
        }
    }

    /// Real time elapsed since the start.
    pub fn elapsed(&self) -> Duration {
        self.started.elapsed()
    }

    /// Real time elapsed since the start, whole ms.
    pub fn elapsed_ms(&self) -> u64 {
        self.elapsed().as_millis() as u64
    }
}
