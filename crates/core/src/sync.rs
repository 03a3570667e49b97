//! The synchronisation primitives of the system under test, in one place, so that the same
//! code compiles against [loom](https://docs.rs/loom) with the `loom` feature (a project
//! feature, not the global `--cfg loom`, which breaks hyper-util: docs/pitfalls.md#building;
//! a feature also leaves every dependency's build as it is, so the loom suites reuse the
//! release build of the tests).
//!
//! Only the primitives whose interleavings matter switch; `Arc` stays `std::sync::Arc` so
//! public signatures do not change with the cfg.

#[cfg(feature = "loom")]
pub use loom::sync::{
    Mutex, MutexGuard,
    atomic::{AtomicBool, AtomicU64, Ordering},
};
#[cfg(not(feature = "loom"))]
pub use std::sync::{
    Mutex, MutexGuard,
    atomic::{AtomicBool, AtomicU64, Ordering},
};

/// Locks `mutex`, ignoring poisoning: every critical section in the system under test leaves
/// its data consistent before anything that can panic, so a panic elsewhere does not make
/// the data unusable.
pub fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}
