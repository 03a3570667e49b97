//! Shared by the live tests: one live test at a time, the binary, bounded waits.

#![allow(dead_code)]

use std::path::PathBuf;
use std::sync::{Mutex, MutexGuard};

static SERIAL: Mutex<()> = Mutex::new(());

/// Held for the whole of a test that starts real processes: live tests run one at a time.
pub fn serial() -> MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|p| p.into_inner())
}

/// The `leasesim` binary of this build.
pub fn leasesim() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_leasesim"))
}
