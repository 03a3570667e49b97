//! The synchronisation primitives of the system under test, in one place, so that the same
//! code compiles against [loom](https://docs.rs/loom) under `--cfg leasesim_loom` (a project
//! cfg: a global `--cfg loom` breaks hyper-util, see DESIGN.md "Known pitfalls").
//!
//! Only the primitives whose interleavings matter switch; `Arc` stays `std::sync::Arc` so
//! public signatures do not change with the cfg.

#[cfg(leasesim_loom)]
pub(crate) use loom::sync::{
    Mutex, MutexGuard,
    atomic::{AtomicBool, AtomicU64, Ordering},
};
#[cfg(not(leasesim_loom))]
pub(crate) use std::sync::{
    Mutex, MutexGuard,
    atomic::{AtomicBool, AtomicU64, Ordering},
};

/// Locks `mutex`, ignoring poisoning: every critical section in the system under test leaves
/// its data consistent before anything that can panic, so a panic elsewhere does not make
/// the data unusable.
pub(crate) fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}
