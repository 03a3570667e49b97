//! Spawning the children of a live run: every child is forked by one dedicated thread, the
//! spawner, that lives for the whole of `leasesim live`.
//!
//! Why a thread of its own: `PR_SET_PDEATHSIG` fires when the *thread* that forked the child
//! exits, not the process. A child forked from one of tokio's blocking threads (which exit
//! when idle) would be SIGKILLed in the middle of the run. The spawner forks every child,
//! and each child, between fork and exec, asks for SIGKILL at its parent's death and then
//! checks `getppid()` against the orchestrator's pid: had the orchestrator died before the
//! `prctl`, the child would have been re-parented already and would never get the signal,
//! so it refuses to exec. Dropping the [`Spawner`] ends its thread, and with it (through
//! the same signal) any child still running: a last guard, never the way a run stops them.

// Live mode is real by design (docs/live.md): bounded waits on real children; never on a simulated
// path.
#![allow(clippy::disallowed_types, clippy::disallowed_methods)]
use std::fs::{File, OpenOptions};
use std::io::{self, Read};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::mpsc;
use std::time::Duration;

/// Exit status a child takes when it finds its parent already gone before `exec`.
const ORPHANED: i32 = 125;

/// The spawner thread of one `leasesim live` (see the module documentation).
pub struct Spawner {
    requests: Option<mpsc::Sender<Request>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

struct Request {
    command: Command,
    reply: mpsc::Sender<io::Result<Child>>,
}

impl Spawner {
    /// Starts the spawner thread.
    ///
    /// # Errors
    /// The thread cannot be started.
    pub fn start() -> io::Result<Spawner> {
        let (requests, inbox) = mpsc::channel::<Request>();
        let parent = rustix::process::getpid();
        // Live mode is real by design (docs/live.md): this thread never runs in a
        // simulation.
        #[allow(clippy::disallowed_methods)]
        let thread = std::thread::Builder::new()
            .name("live-spawner".into())
            .spawn(move || {
                for Request { mut command, reply } in inbox {
                    // SAFETY: the closure only makes async-signal-safe calls (prctl, getppid,
                    // _exit) between fork and exec.
                    unsafe {
                        command.pre_exec(move || {
                            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL, 0, 0, 0) != 0 {
                                return Err(io::Error::last_os_error());
                            }
                            if libc::getppid() != parent.as_raw_nonzero().get() {
                                libc::_exit(ORPHANED);
                            }
                            Ok(())
                        });
                    }
                    let _ = reply.send(command.spawn());
                }
            })?;
        Ok(Spawner {
            requests: Some(requests),
            thread: Some(thread),
        })
    }

    /// Spawns `command` from the spawner thread, its stdout and stderr appended to `log`
    /// (created with its folder).
    ///
    /// # Errors
    /// The log cannot be created, the spawner has stopped, or the spawn failed (naming the
    /// program).
    pub fn spawn(&self, mut command: Command, log: &Path) -> io::Result<Child> {
        if let Some(dir) = log.parent() {
            std::fs::create_dir_all(dir)?;
        }
        let out = OpenOptions::new()
            .create(true)
            .append(true)
            .open(log)
            .map_err(|e| io::Error::new(e.kind(), format!("log {}: {e}", log.display())))?;
        let err = out.try_clone()?;
        command
            .stdin(Stdio::null())
            .stdout(Stdio::from(out))
            .stderr(Stdio::from(err));
        let program = command.get_program().to_string_lossy().into_owned();
        let (reply, answer) = mpsc::channel();
        self.requests
            .as_ref()
            .ok_or_else(|| io::Error::other("the spawner has stopped"))?
            .send(Request { command, reply })
            .map_err(|_| io::Error::other("the spawner thread has stopped"))?;
        answer
            .recv()
            .map_err(|_| io::Error::other("the spawner thread has stopped"))?
            .map_err(|e| io::Error::new(e.kind(), format!("cannot start {program}: {e}")))
    }
}

impl Drop for Spawner {
    fn drop(&mut self) {
        drop(self.requests.take());
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// A running child of the run, killed (SIGCONT, then SIGKILL) and reaped when dropped, so a
/// failing test or an early return leaves nothing behind.
#[derive(Debug)]
pub struct Proc {
    /// The host it plays (`lease`, `replica-2`, …).
    pub host: String,
    /// Its boot (a service) or incarnation (a replica), from 0.
    pub boot: u64,
    /// Its history file (`processes/HOST-BOOT.jsonl`).
    pub history: PathBuf,
    /// Its log (`logs/HOST-BOOT.log`).
    pub log: PathBuf,
    /// The child until it is reaped, then `None`: its pid is free again and may already name
    /// another process, so nothing may signal it after that.
    child: Option<Child>,
    /// How it exited, once reaped.
    status: Option<ExitStatus>,
}

impl Proc {
    /// Wraps a spawned child.
    pub fn new(host: &str, boot: u64, history: PathBuf, log: PathBuf, child: Child) -> Proc {
        Proc {
            host: host.to_owned(),
            boot,
            history,
            log,
            child: Some(child),
            status: None,
        }
    }

    /// Its pid (0 once reaped).
    pub fn pid(&self) -> u32 {
        self.child.as_ref().map_or(0, Child::id)
    }

    /// Sends `signal` (a no-op once reaped).
    pub fn signal(&self, signal: i32) {
        if let Some(child) = &self.child
            && let Ok(pid) = i32::try_from(child.id())
        {
            // SAFETY: kill(2) on our own unreaped child's pid: it cannot have been reused.
            unsafe {
                libc::kill(pid, signal);
            }
        }
    }

    /// Whether it has exited (reaping it then, and forgetting its pid), with its status.
    pub fn exited(&mut self) -> Option<ExitStatus> {
        if let Some(child) = self.child.as_mut()
            && let Ok(Some(status)) = child.try_wait()
        {
            self.reaped(status);
        }
        self.status
    }

    /// How it exited, if it has been reaped (without looking again).
    pub fn status(&self) -> Option<ExitStatus> {
        self.status
    }

    /// Forgets the reaped child, keeping how it exited.
    fn reaped(&mut self, status: ExitStatus) {
        self.child = None;
        self.status = Some(status);
    }

    /// Waits up to `bound` for it to exit; `true` if it did.
    pub fn wait_for(&mut self, bound: Duration) -> bool {
        let deadline = std::time::Instant::now() + bound;
        loop {
            if self.exited().is_some() {
                return true;
            }
            if std::time::Instant::now() >= deadline {
                return false;
            }
            #[allow(clippy::disallowed_methods)]
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// SIGTERM (after a SIGCONT, so a paused child can act on it); SIGKILL after `bound`;
    /// reaped. Returns `true` if it stopped by itself within `bound`.
    pub fn stop(&mut self, bound: Duration) -> bool {
        if self.exited().is_some() {
            return true;
        }
        self.signal(libc::SIGCONT);
        self.signal(libc::SIGTERM);
        let graceful = self.wait_for(bound);
        if !graceful {
            self.kill();
        }
        graceful
    }

    /// SIGKILL and reap (a no-op once reaped).
    pub fn kill(&mut self) {
        if let Some(child) = self.child.as_mut() {
            let _ = child.kill();
            if let Ok(status) = child.wait() {
                self.reaped(status);
            }
        }
    }
}

impl Drop for Proc {
    fn drop(&mut self) {
        self.kill();
    }
}

/// Waits up to `bound` for a service's `… listening on ADDR` line in its log (its first
/// stdout line; stdout is line-buffered), and returns ADDR.
///
/// # Errors
/// The process exited first, or no such line came within `bound`: the message quotes the log's
/// tail.
pub fn wait_for_address(proc: &mut Proc, bound: Duration) -> Result<String, String> {
    let deadline = std::time::Instant::now() + bound;
    loop {
        let text = read_log(&proc.log);
        if let Some(addr) = text.lines().find_map(|line| {
            let (_, rest) = line.split_once("listening on ")?;
            rest.split_whitespace().next().map(str::to_owned)
        }) {
            return Ok(addr);
        }
        if let Some(status) = proc.exited() {
            return Err(format!(
                "{} exited ({status}) before listening; {}: {}",
                proc.host,
                proc.log.display(),
                tail(&text)
            ));
        }
        if std::time::Instant::now() >= deadline {
            return Err(format!(
                "{} printed no `listening on ADDR` within {bound:?}; {}: {}",
                proc.host,
                proc.log.display(),
                tail(&text)
            ));
        }
        #[allow(clippy::disallowed_methods)]
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The text of a log so far (empty if unreadable).
pub fn read_log(path: &Path) -> String {
    let mut text = String::new();
    if let Ok(mut file) = File::open(path) {
        let _ = file.read_to_string(&mut text);
    }
    text
}

/// The last few lines of a log, for an error message.
pub fn tail(text: &str) -> String {
    let lines: Vec<&str> = text.lines().collect();
    let start = lines.len().saturating_sub(5);
    match lines[start..].join(" | ") {
        empty if empty.is_empty() => "(empty)".to_owned(),
        tail => tail,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Spawns `program args` through `spawner` as host `host`'s process, logging to
    /// `host.log` in `dir` (no history or log path of its own).
    fn spawn(spawner: &Spawner, dir: &Path, host: &str, program: &str, args: &[&str]) -> Proc {
        let mut command = Command::new(program);
        command.args(args);
        let child = spawner.spawn(command, &dir.join(format!("{host}.log")));
        Proc::new(host, 0, PathBuf::new(), PathBuf::new(), child.unwrap())
    }

    #[test]
    fn a_child_started_by_the_spawner_runs_and_its_output_reaches_its_log() {
        let dir = tempfile::tempdir().unwrap();
        let spawner = Spawner::start().unwrap();
        let log = dir.path().join("logs/x-0.log");
        let mut command = Command::new("sh");
        command.args([
            "-c",
            "echo service listening on 127.0.0.1:1234; echo oops >&2",
        ]);
        let child = spawner.spawn(command, &log).unwrap();
        let mut proc = Proc::new("x", 0, dir.path().join("x-0.jsonl"), log.clone(), child);
        let addr = wait_for_address(&mut proc, Duration::from_secs(5)).unwrap();
        assert_eq!(addr, "127.0.0.1:1234");
        assert!(proc.wait_for(Duration::from_secs(5)));
        assert!(read_log(&log).contains("oops"));
    }

    #[test]
    fn a_reaped_child_is_forgotten_and_its_exit_status_kept() {
        let dir = tempfile::tempdir().unwrap();
        let spawner = Spawner::start().unwrap();
        let mut proc = spawn(&spawner, dir.path(), "e", "sh", &["-c", "exit 7"]);
        assert_ne!(proc.pid(), 0);
        assert!(proc.wait_for(Duration::from_secs(5)));
        assert_eq!(proc.pid(), 0, "its pid is forgotten once reaped");
        assert_eq!(proc.status().and_then(|s| s.code()), Some(7));
        // Nothing left to signal or kill: the status stays the exit's.
        proc.signal(libc::SIGKILL);
        proc.kill();
        assert_eq!(proc.exited().and_then(|s| s.code()), Some(7));
        assert!(proc.stop(Duration::from_secs(1)));
    }

    #[test]
    fn a_killed_child_is_reaped_with_its_signal() {
        use std::os::unix::process::ExitStatusExt;
        let dir = tempfile::tempdir().unwrap();
        let spawner = Spawner::start().unwrap();
        let mut proc = spawn(&spawner, dir.path(), "k", "sleep", &["30"]);
        proc.kill();
        assert_eq!(proc.pid(), 0);
        assert_eq!(proc.status().and_then(|s| s.signal()), Some(libc::SIGKILL));
    }

    #[test]
    fn a_child_is_killed_when_the_spawner_thread_ends() {
        let dir = tempfile::tempdir().unwrap();
        let spawner = Spawner::start().unwrap();
        let mut proc = spawn(&spawner, dir.path(), "s", "sleep", &["30"]);
        drop(spawner);
        assert!(proc.wait_for(Duration::from_secs(5)), "PDEATHSIG killed it");
    }
}
