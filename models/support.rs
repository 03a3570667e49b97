//! Running a model: how many interleavings loom explored, and proving a mutant is killed.
//!
//! Every model panics with a message that starts with the invariant it found broken (`EXCL:`,
//! `LEDGER:`…), so a mutant test can check that the right invariant killed it and not some
//! other failure.

use std::any::Any;
use std::panic::{self, AssertUnwindSafe};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use leasesim::lease::SessionId;

/// Preemption bound used by the mutant tests whatever `LOOM_MAX_PREEMPTIONS` says: every
/// planted bug here needs at most two forced thread switches to show, and a fixed bound
/// keeps those tests quick and independent of the environment.
pub const MUTANT_PREEMPTIONS: usize = 2;

/// The one session every model contends for.
pub fn s1() -> SessionId {
    SessionId::new("s1").expect("a valid session id")
}

/// What one exhaustive check did.
#[derive(Clone, Copy, Debug)]
pub struct Explored {
    /// Executions (interleavings) loom ran, counted by the model itself.
    pub interleavings: usize,
    /// Real time the check took.
    pub wall: Duration,
}

/// Checks `model` on every interleaving within `preemptions` (`None`: unbounded), counting
/// the executions. `None` for `max_duration` lets the check run to completion.
pub fn explore(
    preemptions: Option<usize>,
    max_duration: Option<Duration>,
    model: impl Fn() + Send + Sync + 'static,
) -> Explored {
    let interleavings = Arc::new(AtomicUsize::new(0));
    let counter = interleavings.clone();
    let mut builder = loom::model::Builder::new();
    builder.preemption_bound = preemptions;
    builder.max_duration = max_duration;
    // The benchmark measures real time; nothing in the system under test sees it.
    #[allow(clippy::disallowed_types)]
    let started = std::time::Instant::now();
    let check = move || {
        builder.check(move || {
            counter.fetch_add(1, Ordering::Relaxed);
            model();
        })
    };
    match std::env::var("LOOM_LOG") {
        // As `loom::model` does: loom traces every thread switch it makes through `tracing`.
        Ok(_) => tracing::subscriber::with_default(loom_log_subscriber(), check),
        Err(_) => check(),
    }
    Explored {
        interleavings: interleavings.load(Ordering::Relaxed),
        wall: started.elapsed(),
    }
}

/// The preemption bound when `LOOM_MAX_PREEMPTIONS` is unset. (loom's own default is
/// unbounded, which the three-thread models do not finish in minutes.)
pub const DEFAULT_PREEMPTIONS: usize = 3;

/// Prints loom's trace of each execution, filtered by `LOOM_LOG` (e.g. `trace`).
fn loom_log_subscriber() -> impl tracing::Subscriber + Send + Sync {
    tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::from_env("LOOM_LOG"))
        .with_test_writer()
        .without_time()
        .finish()
}

/// Checks `model` at the bound `LOOM_MAX_PREEMPTIONS` sets ([`DEFAULT_PREEMPTIONS`] when
/// unset), as the documented command runs it, and returns how many interleavings were
/// explored.
pub fn check(model: impl Fn() + Send + Sync + 'static) -> usize {
    let bound = match std::env::var("LOOM_MAX_PREEMPTIONS") {
        Ok(bound) => bound.parse().unwrap_or_else(|_| {
            panic!("LOOM_MAX_PREEMPTIONS={bound:?}: expected a number of preemptions, e.g. 3")
        }),
        Err(_) => DEFAULT_PREEMPTIONS,
    };
    explore(Some(bound), None, model).interleavings
}

/// Asserts that loom finds an interleaving of `model` (run with a planted bug) that breaks
/// `invariant`: the model must panic, and its message must name that invariant.
///
/// # Panics
/// When the model passes every interleaving (the mutant survived) or fails another way.
pub fn assert_killed(invariant: &str, model: impl Fn() + Send + Sync + 'static) {
    let outcome = panic::catch_unwind(AssertUnwindSafe(|| {
        explore(Some(MUTANT_PREEMPTIONS), None, model)
    }));
    match outcome {
        Ok(explored) => panic!(
            "the mutant survived: {} interleavings at preemption bound {MUTANT_PREEMPTIONS} \
             all kept {invariant}; the model no longer exercises the race it plants",
            explored.interleavings
        ),
        Err(payload) => {
            let message = panic_message(&*payload);
            assert!(
                message.starts_with(&format!("{invariant}:")),
                "the mutant was caught, but not by {invariant}: {message}"
            );
        }
    }
}

fn panic_message(payload: &(dyn Any + Send)) -> String {
    payload
        .downcast_ref::<String>()
        .cloned()
        .or_else(|| payload.downcast_ref::<&str>().map(|s| s.to_string()))
        .unwrap_or_else(|| "(a panic without a message)".into())
}

/// Counts, across every interleaving of one check, how often something happened: the
/// "sometimes" side of a model, proving the races it is about were actually reached.
#[derive(Clone, Debug, Default)]
pub struct Sometimes(Arc<AtomicUsize>);

impl Sometimes {
    /// Counts one occurrence (call it from the model's main thread, after the join).
    pub fn saw(&self) {
        self.0.fetch_add(1, Ordering::Relaxed);
    }

    /// Asserts it happened in at least one interleaving.
    pub fn assert_reached(&self, what: &str) {
        assert!(
            self.0.load(Ordering::Relaxed) > 0,
            "no interleaving reached {what}: the model is not exercising the race it claims to"
        );
    }
}
