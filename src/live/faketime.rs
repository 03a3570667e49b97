//! libfaketime for live mode's clock faults (docs/live.md): where the library is,
//! and how a process is started under it. True time stays out of its reach ([`super::truth`]).

use std::path::{Path, PathBuf};
use std::process::Command;

use super::nemesis::HostClock;

/// libfaketime's library, found where Debian's `faketime` package puts it (any
/// architecture), or `LEASESIM_LIBFAKETIME`.
///
/// # Errors
/// Not installed: the message says how to install it.
pub fn library() -> Result<PathBuf, String> {
    if let Some(path) = std::env::var_os("LEASESIM_LIBFAKETIME") {
        let path = PathBuf::from(path);
        return if path.is_file() {
            Ok(path)
        } else {
            Err(format!(
                "LEASESIM_LIBFAKETIME={}: no such file",
                path.display()
            ))
        };
    }
    let mut candidates = vec![PathBuf::from(
        "/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1",
    )];
    if let Ok(entries) = std::fs::read_dir("/usr/lib") {
        for entry in entries.flatten() {
            candidates.push(entry.path().join("faketime/libfaketime.so.1"));
        }
    }
    candidates.push(PathBuf::from("/usr/lib/faketime/libfaketime.so.1"));
    candidates.push(PathBuf::from("/usr/local/lib/faketime/libfaketime.so.1"));
    candidates.into_iter().find(|p| p.is_file()).ok_or_else(|| {
        "the schedule drifts or steps a clock, which live mode does with libfaketime, and \
         libfaketime.so.1 is not installed: `apt-get install faketime` (or set \
         LEASESIM_LIBFAKETIME to the library)"
            .to_owned()
    })
}

/// Sets `command` to start under libfaketime `library` with `clock`'s faults: wall steps
/// through `spec`, a timestamp file (`+0` at first) the nemesis rewrites and libfaketime
/// reads at most once a second, with monotonic time left real; otherwise the drift as
/// FAKETIME's rate (`+0 x1.000200` for 200 ppm), applied to every clock from the start.
///
/// # Errors
/// `spec` cannot be written.
pub fn start_under(
    command: &mut Command,
    library: &Path,
    clock: HostClock,
    spec: &Path,
) -> std::io::Result<()> {
    command.env("LD_PRELOAD", library);
    if clock.wall_steps {
        if !spec.exists() {
            std::fs::write(spec, "+0\n")?;
        }
        command
            .env("FAKETIME_TIMESTAMP_FILE", spec)
            .env("FAKETIME_CACHE_DURATION", "1")
            .env("FAKETIME_DONT_FAKE_MONOTONIC", "1");
    } else {
        let rate = 1.0 + clock.drift_ppm as f64 / 1e6;
        command.env("FAKETIME", format!("+0 x{rate:.6}"));
    }
    Ok(())
}
