//! The locks of a session: the session lock (`{stem}.lock`, held for one decision) and the
//! generation locks (`{stem}.gen.{token}`, held by the holder of `token` while it holds).
//!
//! Every lock is `flock(2)` on its own open file description ([`FlockOs::open_lock`] and
//! friends; std opens with `O_CLOEXEC`), so two opens conflict even inside one process.

use std::io;
use std::path::{Path, PathBuf};
use std::time::Duration;

use super::os::{FlockOs, OpenFile};
use leasesim_core::clock::Instant;
use leasesim_core::lease::LeaseError;

/// `LeaseError::Unavailable` naming `path`, what was done and the OS error.
pub fn unavailable(path: &Path, what: &str, e: impl std::fmt::Display) -> LeaseError {
    LeaseError::Unavailable {
        reason: format!("{}: {what}: {e}", path.display()),
    }
}

/// The session lock, held: unlocked explicitly, then closed, when dropped.
#[derive(Debug)]
pub struct SessionLock<'os> {
    file: Box<dyn OpenFile>,
    path: PathBuf,
    os: &'os dyn FlockOs,
}

/// How to take a session lock.
pub struct Take<'a> {
    /// The lock file.
    pub path: &'a Path,
    /// Longest wait for another holder.
    pub wait: Duration,
    /// Whether to check, once locked, that `path` still names the locked inode (always, but
    /// under the `unlink-on-release` mutant).
    pub verify_inode: bool,
}

impl<'os> SessionLock<'os> {
    /// Opens (creating it if needed) and locks the session lock file, trying every
    /// millisecond for up to `take.wait`; `on_busy` is called on the first busy attempt. Once
    /// locked, checks that the path still names the locked inode (someone may have unlinked
    /// or replaced the file after it was opened: then the lock guards nothing, so it is
    /// dropped and taken again on the file the path names now).
    ///
    /// # Errors
    /// [`LeaseError::Unavailable`] naming the file: an I/O error, or the lock still busy
    /// after `take.wait` (at once on an OS that cannot wait, [`FlockOs::wait_busy`]).
    pub fn take(
        os: &'os dyn FlockOs,
        take: &Take<'_>,
        mut on_busy: impl FnMut(),
    ) -> Result<SessionLock<'os>, LeaseError> {
        // Saturating: a wait too long to add (`Duration::MAX`) means "until it is free".
        let deadline = os
            .now()
            .since_origin()
            .checked_add(take.wait)
            .map_or(Instant::from_origin(Duration::MAX), Instant::from_origin);
        let mut busy_seen = false;
        loop {
            let file = os
                .open_lock(take.path)
                .map_err(|e| unavailable(take.path, "open session lock", e))?;
            while !file
                .try_lock()
                .map_err(|e| unavailable(take.path, "lock session lock", e))?
            {
                if !std::mem::replace(&mut busy_seen, true) {
                    on_busy();
                }
                if os.now() >= deadline {
                    return Err(busy_too_long(take));
                }
                os.wait_busy()
                    .map_err(|e| unavailable(take.path, "session lock busy", e))?;
            }
            if !take.verify_inode || same_inode(&*file, take.path)? {
                return Ok(SessionLock {
                    file,
                    path: take.path.to_path_buf(),
                    os,
                });
            }
            let path = take.path.display();
            tracing::warn!(target: "leasesim::lease::flock::lock", %path, "session lock file replaced after open: locking again");
            drop(file);
            if os.now() >= deadline {
                return Err(unavailable(
                    take.path,
                    "lock session lock",
                    "the file kept being unlinked or replaced while it was locked",
                ));
            }
        }
    }

    /// Unlinks the lock file while still holding it, then closes it: the
    /// `unlink-on-release` mutant (field case F8).
    pub fn unlink_and_drop(self) {
        if let Err(e) = self.os.unlink(&self.path) {
            tracing::warn!(target: "leasesim::lease::flock::lock", path = %self.path.display(), "unlink session lock: {e}");
        }
    }
}

impl Drop for SessionLock<'_> {
    fn drop(&mut self) {
        // Explicitly, so a forked child that inherited the descriptor mid-decision cannot
        // keep it locked; closing alone would leave it to the last close.
        if let Err(e) = self.file.unlock() {
            tracing::warn!(target: "leasesim::lease::flock::lock", path = %self.path.display(), "unlock session lock: {e}");
        }
    }
}

fn busy_too_long(take: &Take<'_>) -> LeaseError {
    unavailable(
        take.path,
        "session lock",
        format_args!(
            "held by another process for over {:?}; a decision takes milliseconds, so that \
             process is probably stopped (SIGSTOP, a debugger) or hung",
            take.wait
        ),
    )
}

/// Whether `path` names the inode `file` has open.
fn same_inode(file: &dyn OpenFile, path: &Path) -> Result<bool, LeaseError> {
    file.is_named_by(path)
        .map_err(|e| unavailable(path, "stat session lock", e))
}

/// The generation lock file of `token`.
pub fn gen_path(dir: &Path, stem: &str, token: u64) -> PathBuf {
    dir.join(format!("{stem}.gen.{token}"))
}

/// Creates and locks the generation file of the first token above `after` whose file does
/// not exist yet, returning the token and the locked file. A file that exists already was
/// made by a winner that crashed before its record was written: its token is skipped, as it
/// may count as handed out.
///
/// # Errors
/// [`LeaseError::Unavailable`] naming the file.
pub fn create_gen(
    os: &dyn FlockOs,
    dir: &Path,
    stem: &str,
    after: u64,
) -> Result<(u64, Box<dyn OpenFile>), LeaseError> {
    let mut token = after;
    loop {
        token = token
            .checked_add(1)
            .ok_or_else(|| LeaseError::Unavailable {
                reason: format!("{}: session token space exhausted", dir.display()),
            })?;
        let path = gen_path(dir, stem, token);
        let file = match os.create_new(&path) {
            Ok(file) => file,
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(unavailable(&path, "create generation lock", e)),
        };
        return match file.try_lock() {
            Ok(true) => Ok((token, file)),
            Ok(false) => Err(unavailable(
                &path,
                "lock a new generation lock",
                "locked by another open of a file just created",
            )),
            Err(e) => Err(unavailable(&path, "lock a new generation lock", e)),
        };
    }
}

/// What a probe of a holder's generation lock found.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Probe {
    /// Locked: the holder's process is alive (or stopped), or it is another open of this
    /// process.
    Alive,
    /// Lockable: no process holds it any more (the holder was killed or crashed).
    Gone,
    /// No such file: counted as alive, to be safe.
    Missing,
}

/// Tries the generation lock at `path` and unlocks it again at once.
///
/// # Errors
/// [`LeaseError::Unavailable`] on an I/O error.
pub fn probe_gen(os: &dyn FlockOs, path: &Path) -> Result<Probe, LeaseError> {
    let file = match os.open_read(path) {
        Ok(file) => file,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Probe::Missing),
        Err(e) => return Err(unavailable(path, "open generation lock", e)),
    };
    match file.try_lock() {
        Ok(true) => {
            file.unlock()
                .map_err(|e| unavailable(path, "unlock generation lock probe", e))?;
            Ok(Probe::Gone)
        }
        Ok(false) => Ok(Probe::Alive),
        Err(e) => Err(unavailable(path, "probe generation lock", e)),
    }
}

/// The tokens of every generation file of `stem` in `dir`, in increasing order.
///
/// # Errors
/// [`LeaseError::Unavailable`] when the directory cannot be read.
pub fn gen_tokens(os: &dyn FlockOs, dir: &Path, stem: &str) -> Result<Vec<u64>, LeaseError> {
    let prefix = format!("{stem}.gen.");
    let names = os
        .list(dir)
        .map_err(|e| unavailable(dir, "list lease directory", e))?;
    let mut tokens: Vec<u64> = names
        .iter()
        .filter_map(|name| {
            name.strip_prefix(&prefix)
                .filter(|t| !t.is_empty() && t.bytes().all(|b| b.is_ascii_digit()))
                .and_then(|t| t.parse::<u64>().ok())
        })
        .collect();
    tokens.sort_unstable();
    Ok(tokens)
}

/// Removes the generation files of `stem` below `below` that nobody holds; a held one (a
/// stopped holder, another open in this process) stays. Failures are logged: a file left
/// behind costs a directory entry, never safety.
pub fn remove_stale_gens(os: &dyn FlockOs, dir: &Path, stem: &str, below: u64) {
    let tokens = match gen_tokens(os, dir, stem) {
        Ok(tokens) => tokens,
        Err(e) => {
            tracing::warn!(target: "leasesim::lease::flock::lock", "generation lock clean-up: {e}");
            return;
        }
    };
    for token in tokens.into_iter().filter(|&t| t < below) {
        let path = gen_path(dir, stem, token);
        let Ok(file) = os.open_read(&path) else {
            continue;
        };
        if matches!(file.try_lock(), Ok(true))
            && let Err(e) = os.unlink(&path)
        {
            tracing::warn!(target: "leasesim::lease::flock::lock", path = %path.display(), "remove stale generation lock: {e}");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::os::RealOs;

    const OS: &RealOs = &RealOs {
        pid: std::process::id,
    };

    fn real<'a>(lock: &'a SessionLock<'_>) -> &'a crate::os::RealFile {
        lock.file.as_any().downcast_ref().expect("a real file")
    }

    fn take(path: &Path, wait_ms: u64) -> Take<'_> {
        Take {
            path,
            wait: Duration::from_millis(wait_ms),
            verify_inode: true,
        }
    }

    #[test]
    fn a_second_open_waits_and_then_names_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.lock");
        let held = SessionLock::take(OS, &take(&path, 100), || panic!("not busy")).unwrap();
        let mut busy = 0;
        let err = SessionLock::take(OS, &take(&path, 20), || busy += 1).unwrap_err();
        assert_eq!(busy, 1, "on_busy once per call");
        let LeaseError::Unavailable { reason } = err else {
            panic!("{err:?}")
        };
        assert!(
            reason.contains("s.lock") && reason.contains("another process"),
            "{reason}"
        );
        drop(held);
        SessionLock::take(OS, &take(&path, 20), || panic!("not busy after drop")).unwrap();
    }

    /// F8 in one thread: the holder unlinks the lock file and closes it while a waiter is
    /// polling the old inode (done from the waiter's `on_busy`). The waiter's lock then lands
    /// on the deleted inode; with the check it notices, and locks the file the path names now.
    fn waiter_after_unlink(
        verify_inode: bool,
    ) -> (SessionLock<'static>, PathBuf, tempfile::TempDir) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.lock");
        let mut holder = Some(SessionLock::take(OS, &take(&path, 100), || {}).unwrap());
        let waiter = Take {
            verify_inode,
            ..take(&path, 1000)
        };
        let lock = SessionLock::take(OS, &waiter, || {
            holder.take().expect("busy once").unlink_and_drop();
        })
        .unwrap();
        (lock, path, dir)
    }

    #[test]
    fn a_lock_on_an_unlinked_file_is_dropped_and_taken_on_the_new_one() {
        let (lock, path, _dir) = waiter_after_unlink(true);
        assert!(same_inode(&*lock.file, &path).unwrap());
        let open = rustix::fs::fstat(&real(&lock).0).unwrap();
        assert_eq!(open.st_nlink, 1, "the lock is on a linked file");
    }

    #[test]
    fn without_the_check_the_lock_lands_on_the_deleted_inode() {
        let (lock, path, _dir) = waiter_after_unlink(false);
        assert!(!path.exists(), "nobody created the file again");
        let open = rustix::fs::fstat(&real(&lock).0).unwrap();
        assert_eq!(open.st_nlink, 0, "the lock is on an unlinked inode");
    }

    #[test]
    fn generation_files_are_created_above_the_mark_and_skip_leftovers() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(gen_path(dir.path(), "s", 4), b"").unwrap();
        let (token, held) = create_gen(OS, dir.path(), "s", 3).unwrap();
        assert_eq!(token, 5, "gen.4 exists: a crashed winner's");
        assert_eq!(
            probe_gen(OS, &gen_path(dir.path(), "s", 5)).unwrap(),
            Probe::Alive
        );
        assert_eq!(
            probe_gen(OS, &gen_path(dir.path(), "s", 4)).unwrap(),
            Probe::Gone
        );
        assert_eq!(
            probe_gen(OS, &gen_path(dir.path(), "s", 9)).unwrap(),
            Probe::Missing
        );
        std::fs::write(dir.path().join("s.gen.x"), b"").unwrap();
        std::fs::write(dir.path().join("t.gen.7"), b"").unwrap();
        std::fs::write(dir.path().join("s.gen.2"), b"").unwrap();
        assert_eq!(gen_tokens(OS, dir.path(), "s").unwrap(), [2, 4, 5]);
        remove_stale_gens(OS, dir.path(), "s", 6);
        assert_eq!(
            gen_tokens(OS, dir.path(), "s").unwrap(),
            [5],
            "the held one stays"
        );
        drop(held);
        assert_eq!(
            probe_gen(OS, &gen_path(dir.path(), "s", 5)).unwrap(),
            Probe::Gone
        );
    }
}
