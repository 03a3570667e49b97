//! A `leasesim flock` process as a test sees it ([`Holder`]): commands in, parsed JSON lines
//! out, every wait bounded by the test's [`Bound`], and the process (and any child it forked
//! to linger) killed and reaped when the handle drops.
//!
//! Real processes run in real time, so the bound and the line waits read the real clock.
#![allow(clippy::disallowed_types, clippy::disallowed_methods)]

use std::io::{BufRead, BufReader, Read, Write};
use std::path::Path;
use std::process::{Child, ChildStdin, ExitStatus, Stdio};
use std::sync::mpsc::{Receiver, RecvTimeoutError, channel};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use leasesim::lease::flock::driver::{Event, Line, Reply, Verb};
use leasesim::mutant::Mutant;
use leasesim_testkit::leasesim;
use rustix::process::{Pid, Signal, kill_process};
use tempfile::TempDir;

/// A process test: `fn(mutant) -> Ok` when the outcome is right, `Err(what went wrong)`.
pub type ProcessTest = fn(Option<Mutant>) -> Result<(), String>;

/// The overall time bound of one test: every wait ends by it.
#[derive(Clone, Copy, Debug)]
pub struct Bound {
    deadline: Instant,
}

impl Bound {
    /// A bound `limit` from now.
    pub fn new(limit: Duration) -> Self {
        Bound {
            deadline: Instant::now() + limit,
        }
    }

    /// The time left, zero when it has passed.
    pub fn remaining(&self) -> Duration {
        self.deadline.saturating_duration_since(Instant::now())
    }
}

/// Sleeps `d` of real time (a child process is being waited for, or a TTL run out).
pub fn sleep(d: Duration) {
    std::thread::sleep(d);
}

/// A running `leasesim flock` process.
pub struct Holder {
    /// Its name in messages (the owner's replica name).
    pub name: String,
    child: Child,
    stdin: Option<ChildStdin>,
    lines: Receiver<Result<Line, String>>,
    stderr: Arc<Mutex<String>>,
    /// Processes it forked to linger, killed on drop too.
    adopted: Vec<i32>,
}

impl Holder {
    /// Starts `leasesim flock --dir DIR --owner OWNER` with `args` (a `--ttl` of 1 s and a
    /// `--lock-wait` of 10 s unless `args` give theirs) and `mutant`, and waits for its
    /// `ready` event.
    pub fn start(
        dir: &Path,
        owner: &str,
        mutant: Option<Mutant>,
        args: &[&str],
        bound: &Bound,
    ) -> Result<Holder, String> {
        let holder = Holder::spawn(dir, owner, mutant, args)?;
        match holder.next(bound)? {
            Line::Event(Event::Ready { pid }) if pid == holder.child.id() => Ok(holder),
            other => Err(holder.describe(&format!("first line is not ready: {other:?}"))),
        }
    }

    /// Starts the process without waiting for anything.
    pub fn spawn(
        dir: &Path,
        owner: &str,
        mutant: Option<Mutant>,
        args: &[&str],
    ) -> Result<Holder, String> {
        let mut command = leasesim!().command();
        command.arg("flock").arg("--dir").arg(dir);
        command.args(["--owner", owner]);
        if !args.contains(&"--ttl") {
            command.args(["--ttl", "1s"]);
        }
        if !args.contains(&"--lock-wait") {
            command.args(["--lock-wait", "10s"]);
        }
        if let Some(mutant) = mutant {
            command.args(["--mutant", mutant.name()]);
        }
        command.args(args).env_remove("RUST_LOG");
        command.stdin(Stdio::piped()).stdout(Stdio::piped());
        let mut child = command
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| format!("start leasesim flock for {owner}: {e}"))?;
        let stdin = child.stdin.take();
        let lines = read_lines(child.stdout.take().expect("stdout is piped"));
        let stderr = collect(child.stderr.take().expect("stderr is piped"));
        Ok(Holder {
            name: owner.to_owned(),
            child,
            stdin,
            lines,
            stderr,
            adopted: Vec::new(),
        })
    }

    /// The process's pid.
    pub fn pid(&self) -> i32 {
        i32::try_from(self.child.id()).expect("pids fit in i32")
    }

    /// Writes `command` and a line end to the process's stdin.
    pub fn send(&mut self, command: &str) -> Result<(), String> {
        let stdin = self.stdin.as_mut().ok_or("stdin is closed")?;
        writeln!(stdin, "{command}")
            .and_then(|()| stdin.flush())
            .map_err(|e| self.describe(&format!("cannot send `{command}`: {e}")))
    }

    /// The next line the process writes, waiting at most until `bound`.
    pub fn next(&self, bound: &Bound) -> Result<Line, String> {
        match self.lines.recv_timeout(bound.remaining()) {
            Ok(Ok(line)) => Ok(line),
            Ok(Err(raw)) => Err(self.describe(&format!("not a JSON line: {raw:?}"))),
            Err(RecvTimeoutError::Timeout) => Err(self.describe("no line within the test's bound")),
            Err(RecvTimeoutError::Disconnected) => Err(self.describe("stdout closed")),
        }
    }

    /// The next reply, skipping `lock-busy` events; any other event or an error line is an
    /// error (a pause nobody expected would hang the test).
    pub fn reply(&self, bound: &Bound) -> Result<Reply, String> {
        loop {
            match self.next(bound)? {
                Line::Reply(reply) => return Ok(reply),
                Line::Event(Event::LockBusy { .. }) => {}
                other => return Err(self.describe(&format!("expected a reply: {other:?}"))),
            }
        }
    }

    /// Sends `command` and returns its reply, which must answer `verb`.
    pub fn call(&mut self, command: &str, verb: Verb, bound: &Bound) -> Result<Reply, String> {
        self.send(command)?;
        let reply = self.reply(bound)?;
        if reply.reply != verb {
            return Err(self.describe(&format!("`{command}` answered by {reply:?}")));
        }
        Ok(reply)
    }

    /// `acquire SESSION`, which must be granted; its token.
    pub fn acquire_ok(&mut self, session: &str, bound: &Bound) -> Result<u64, String> {
        let reply = self.call(&format!("acquire {session}"), Verb::Acquire, bound)?;
        granted(self, &reply)
    }

    /// The next line, which must be an event.
    pub fn event(&self, bound: &Bound) -> Result<Event, String> {
        match self.next(bound)? {
            Line::Event(event) => Ok(event),
            other => Err(self.describe(&format!("expected an event: {other:?}"))),
        }
    }

    /// The next line, which must be the event `paused` at `point`.
    pub fn paused_at(&self, point: &str, bound: &Bound) -> Result<(), String> {
        match self.event(bound)? {
            Event::Paused { point: at, .. } if at == point => Ok(()),
            other => Err(self.describe(&format!("expected paused at {point}: {other:?}"))),
        }
    }

    /// Sends `signal` to the process.
    pub fn signal(&self, signal: Signal) -> Result<(), String> {
        signal_pid(self.pid(), signal).map_err(|e| self.describe(&e))
    }

    /// SIGKILLs the process and reaps it.
    pub fn kill(&mut self) -> Result<ExitStatus, String> {
        self.signal(Signal::KILL)?;
        self.reap()
    }

    /// Waits for the process to end (after a signal that ends it).
    pub fn reap(&mut self) -> Result<ExitStatus, String> {
        self.child
            .wait()
            .map_err(|e| format!("wait for {}: {e}", self.name))
    }

    /// Waits (until `bound`) for the process to exit by itself.
    pub fn exited(&mut self, bound: &Bound) -> Result<ExitStatus, String> {
        loop {
            match self.child.try_wait() {
                Ok(Some(status)) => return Ok(status),
                Ok(None) if bound.remaining().is_zero() => {
                    return Err(self.describe("still running at the test's bound"));
                }
                Ok(None) => sleep(Duration::from_millis(5)),
                Err(e) => return Err(format!("wait for {}: {e}", self.name)),
            }
        }
    }

    /// Kills `pid` (a child this process forked) too when the handle drops.
    pub fn adopt(&mut self, pid: i32) {
        self.adopted.push(pid);
    }

    /// `what`, with the process's name and its stderr so far.
    pub fn describe(&self, what: &str) -> String {
        let stderr = self.stderr.lock().unwrap_or_else(|e| e.into_inner());
        format!("{}: {what} (stderr: {:?})", self.name, stderr.trim())
    }
}

impl Drop for Holder {
    fn drop(&mut self) {
        for pid in self.adopted.drain(..) {
            let _ = signal_pid(pid, Signal::KILL);
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Sends `signal` to `pid`.
pub fn signal_pid(pid: i32, signal: Signal) -> Result<(), String> {
    let target = Pid::from_raw(pid).ok_or_else(|| format!("bad pid {pid}"))?;
    kill_process(target, signal).map_err(|e| format!("kill({pid}, {signal:?}): {e}"))
}

/// A thread that parses each line of `stdout` and sends it (the raw line when it is not one
/// of the driver's lines); the channel closes at EOF.
fn read_lines(stdout: impl Read + Send + 'static) -> Receiver<Result<Line, String>> {
    let (sender, receiver) = channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            let parsed = serde_json::from_str::<Line>(&line).map_err(|_| line);
            if sender.send(parsed).is_err() {
                break;
            }
        }
    });
    receiver
}

/// A thread that collects `stderr`, for messages.
fn collect(stderr: impl Read + Send + 'static) -> Arc<Mutex<String>> {
    let text = Arc::new(Mutex::new(String::new()));
    let sink = text.clone();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines() {
            let Ok(line) = line else { break };
            let mut text = sink.lock().unwrap_or_else(|e| e.into_inner());
            text.push_str(&line);
            text.push('\n');
        }
    });
    text
}

/// Holders A and B started in a fresh lease directory (returned: the holders' files live as
/// long as it does), both with `args` and `mutant`.
pub fn two_holders(
    mutant: Option<Mutant>,
    args: &[&str],
    bound: &Bound,
) -> Result<(TempDir, Holder, Holder), String> {
    let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
    let a = Holder::start(dir.path(), "A", mutant, args, bound)?;
    let b = Holder::start(dir.path(), "B", mutant, args, bound)?;
    Ok((dir, a, b))
}

/// `Ok` when `reply` is an `ok` grant; its token.
pub fn granted(holder: &Holder, reply: &Reply) -> Result<u64, String> {
    match (reply.ok, reply.token) {
        (true, Some(token)) => Ok(token),
        _ => Err(holder.describe(&format!("expected a grant: {reply:?}"))),
    }
}

/// `Ok` when `reply` is `held`; the holder token it names.
pub fn held(holder: &Holder, reply: &Reply) -> Result<Option<u64>, String> {
    use leasesim::lease::flock::driver::Failure;
    if !reply.ok && reply.error == Some(Failure::Held) {
        Ok(reply.holder_token)
    } else {
        Err(holder.describe(&format!("expected held: {reply:?}")))
    }
}

/// `Err(message)` unless `condition`.
pub fn ensure(condition: bool, message: impl FnOnce() -> String) -> Result<(), String> {
    if condition { Ok(()) } else { Err(message()) }
}

/// Whether `pid` is a live process (not a zombie), from `/proc/PID/stat`.
pub fn alive(pid: i32) -> bool {
    let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
        return false;
    };
    // The state is the first field after the command name's closing parenthesis.
    let state = stat.rsplit_once(')').map(|(_, rest)| rest.trim_start());
    !matches!(
        state.and_then(|rest| rest.chars().next()),
        Some('Z' | 'X') | None
    )
}
