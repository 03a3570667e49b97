//! `leasesim flock`: one real process holding [`FlockLease`]s on command — the program the
//! flock process tests spawn (tests/flock), and one a user can drive by hand (issue 15).
//!
//! It reads one command per line on stdin and writes one JSON line ([`Line`]) per reply or
//! event on stdout, flushed after each; logs go to stderr. Commands:
//! - `acquire SESSION`, `renew SESSION`, `release SESSION` (renew and release act on the last
//!   lease this process got for SESSION);
//! - `fork exit SESSION`: a forked child releases the inherited lease value, drops
//!   everything as a careless child would and `_exit(0)`s; the parent waits for it;
//! - `fork linger`: a forked child sleeps until killed (the parent kills and reaps it at
//!   `quit` and at EOF; a parent that is SIGKILLed leaves it behind, as a real one would);
//! - `go`: continue from a pause (`--pause-at`); `quit`: exit 0 (EOF does the same).
//!
//! The process stays single-threaded (a current-thread runtime, no blocking pool) because it
//! forks: a fork copies only the calling thread. [`FlockLease`] is synchronous inside its
//! async fns, so nothing here waits on the runtime.

use std::collections::{BTreeMap, BTreeSet};
use std::io::{BufRead, Write};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use clap::Args;
use serde::{Deserialize, Serialize};

use super::{FlockError, FlockHooks, FlockLease, FlockLeaseConfig, FlockPoint};
use leasesim_core::lease::{Lease, LeaseError, Owner, SessionId, SessionLease};
use leasesim_core::mutant::Mutant;

/// Why `leasesim flock` stopped before reading any command; the command line turns it into
/// its exit code (2 and 3 of docs/exit-codes.md).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum StartError {
    /// A bad argument: a mutant of another backend, or a directory or TTL
    /// [`FlockLease::open`] refuses.
    BadInput,
    /// The runtime could not start or the lease directory could not be read.
    Harness,
}

/// The exit code of a process that `--crash-at` stopped: `_exit(86)`, no clean-up at all.
pub const CRASH_EXIT_CODE: i32 = 86;

/// The arguments of `leasesim flock`.
#[derive(Args, Debug, Clone)]
pub struct FlockArgs {
    /// The lease directory (it must exist, on a local file system).
    #[arg(long, value_name = "DIR")]
    pub dir: PathBuf,
    /// The replica name of this process's owner.
    #[arg(long, value_name = "NAME")]
    pub owner: String,
    /// The owner's incarnation (bump it to play a restarted replica).
    #[arg(long, value_name = "N", default_value_t = 0)]
    pub incarnation: u64,
    /// The TTL of every lease granted (e.g. 30s, 500ms).
    #[arg(long, value_name = "DURATION", value_parser = humantime::parse_duration)]
    pub ttl: Duration,
    /// Longest wait for a session lock another process holds before a call is `unavailable`.
    #[arg(long, value_name = "DURATION", default_value = "2s", value_parser = humantime::parse_duration)]
    pub lock_wait: Duration,
    /// Plant this flock bug (`leasesim mutants` lists them; only flock ones are accepted).
    #[arg(long, value_name = "NAME", value_parser = Mutant::parse)]
    pub mutant: Option<Mutant>,
    /// Pause at this point of every decision until `go` is read (lock-busy, record-read,
    /// record-half-written); repeatable.
    #[arg(long, value_name = "POINT", value_parser = parse_point)]
    pub pause_at: Vec<FlockPoint>,
    /// Exit at once (`_exit(86)`, no clean-up, like a crash) at this point.
    #[arg(long, value_name = "POINT", value_parser = parse_point)]
    pub crash_at: Option<FlockPoint>,
}

/// The kebab-case name of `point`, as `--pause-at`, `--crash-at` and the events spell it.
pub fn point_name(point: FlockPoint) -> &'static str {
    match point {
        FlockPoint::LockBusy => "lock-busy",
        FlockPoint::RecordRead => "record-read",
        FlockPoint::RecordHalfWritten => "record-half-written",
    }
}

/// Every point, in the order the help lists them.
const POINTS: [FlockPoint; 3] = [
    FlockPoint::LockBusy,
    FlockPoint::RecordRead,
    FlockPoint::RecordHalfWritten,
];

/// The point named `name` ([`point_name`]).
///
/// # Errors
/// A message listing the points when `name` is none of them.
pub fn parse_point(name: &str) -> Result<FlockPoint, String> {
    POINTS
        .into_iter()
        .find(|point| point_name(*point) == name)
        .ok_or_else(|| {
            let names: Vec<&str> = POINTS.into_iter().map(point_name).collect();
            format!(
                "unknown point `{name}`; the points are {}",
                names.join(", ")
            )
        })
}

/// One line on stdout: a reply to a command, an event, or an error that answers no command.
#[derive(Clone, PartialEq, Eq, Debug, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Line {
    /// The answer to one command.
    Reply(Reply),
    /// Something that happened inside a decision, or the start.
    Event(Event),
    /// A line that is not a command, or a start that failed.
    Error(ErrorLine),
}

/// The command a [`Reply`] answers.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Verb {
    /// `acquire SESSION`.
    Acquire,
    /// `renew SESSION`.
    Renew,
    /// `release SESSION`.
    Release,
    /// `fork exit SESSION`.
    ForkExit,
    /// `fork linger`.
    ForkLinger,
    /// `quit`.
    Quit,
}

/// Why a command did not succeed.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Failure {
    /// [`LeaseError::Held`]: another live owner holds the session, or the lease is lost.
    Held,
    /// [`LeaseError::Unavailable`]: the lock or the record could not be used (see `reason`).
    Unavailable,
    /// [`LeaseError::Unsupported`].
    Unsupported,
    /// [`LeaseError::InvalidSession`]: the session id is refused.
    InvalidSession,
    /// `renew`, `release` or `fork exit` of a session this process never acquired.
    NoLease,
    /// `fork` failed.
    Fork,
}

/// The answer to one command: `ok`, and what came of it.
#[derive(Clone, PartialEq, Eq, Debug, Serialize, Deserialize)]
pub struct Reply {
    /// The command answered.
    pub reply: Verb,
    /// The session of the command, as given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session: Option<String>,
    /// Whether the command succeeded.
    pub ok: bool,
    /// The lease's fencing token (acquire and renew that succeeded).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token: Option<u64>,
    /// The lease's expiry on `CLOCK_BOOTTIME`, µs (acquire and renew that succeeded).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expiry_us: Option<u64>,
    /// Why it failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<Failure>,
    /// The live holder's token when it failed [`Failure::Held`] (none: nobody holds it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub holder_token: Option<u64>,
    /// The error's text when it failed for another reason.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// The forked child's pid (`fork exit`, `fork linger`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub child_pid: Option<i32>,
    /// The forked child's exit code when it exited (`fork exit`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exit_code: Option<i32>,
    /// The signal that ended the forked child, when one did (`fork exit`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signal: Option<i32>,
}

impl Reply {
    /// A successful reply to `verb` with nothing else in it.
    fn ok(verb: Verb, session: Option<&str>) -> Reply {
        Reply {
            reply: verb,
            session: session.map(str::to_owned),
            ok: true,
            token: None,
            expiry_us: None,
            error: None,
            holder_token: None,
            reason: None,
            child_pid: None,
            exit_code: None,
            signal: None,
        }
    }

    /// A failed reply to `verb`.
    fn failed(verb: Verb, session: Option<&str>, error: Failure, reason: String) -> Reply {
        Reply {
            ok: false,
            error: Some(error),
            reason: Some(reason),
            ..Reply::ok(verb, session)
        }
    }

    /// The reply to an acquire or renew that returned `outcome`.
    fn granted(verb: Verb, session: &str, outcome: &Result<Lease, LeaseError>) -> Reply {
        match outcome {
            Ok(lease) => Reply {
                token: Some(lease.token()),
                expiry_us: Some(micros(lease.expiry().since_origin())),
                ..Reply::ok(verb, Some(session))
            },
            Err(error) => Reply::refused(verb, session, error),
        }
    }

    /// The reply to a lease call that failed with `error`.
    fn refused(verb: Verb, session: &str, error: &LeaseError) -> Reply {
        match error {
            LeaseError::Held { holder_token } => Reply {
                ok: false,
                error: Some(Failure::Held),
                holder_token: *holder_token,
                ..Reply::ok(verb, Some(session))
            },
            LeaseError::Unavailable { .. } | LeaseError::Unexpected { .. } => {
                Reply::failed(verb, Some(session), Failure::Unavailable, error.to_string())
            }
            LeaseError::InvalidSession { .. } => Reply::failed(
                verb,
                Some(session),
                Failure::InvalidSession,
                error.to_string(),
            ),
            _ => Reply::failed(verb, Some(session), Failure::Unsupported, error.to_string()),
        }
    }
}

/// Something that happened inside a decision (the [`FlockHooks`] points), or the start.
#[derive(Clone, PartialEq, Eq, Debug, Serialize, Deserialize)]
#[serde(tag = "event", rename_all = "kebab-case")]
pub enum Event {
    /// The lease directory is open; commands are read from now on.
    Ready {
        /// This process's pid.
        pid: u32,
    },
    /// The session lock is held by another open file description; the call waits for it.
    LockBusy {
        /// The session of the call.
        session: String,
    },
    /// The decision stopped at `point` (`--pause-at`) and waits for `go`.
    Paused {
        /// The point's name ([`point_name`]).
        point: String,
        /// The session of the decision.
        session: String,
    },
    /// The process exits at `point` now (`--crash-at`), with [`CRASH_EXIT_CODE`].
    Crashing {
        /// The point's name ([`point_name`]).
        point: String,
        /// The session of the decision.
        session: String,
    },
}

/// A line that answers no command: a line that is not a command, `go` outside a pause, or a
/// start that failed.
#[derive(Clone, PartialEq, Eq, Debug, Serialize, Deserialize)]
pub struct ErrorLine {
    /// What kind of error: `bad-command`, `not-paused`, `paused`, `bad-input`, `io`.
    pub error: String,
    /// What is wrong and how to fix it.
    pub reason: String,
}

impl ErrorLine {
    fn new(error: &str, reason: impl Into<String>) -> ErrorLine {
        ErrorLine {
            error: error.to_owned(),
            reason: reason.into(),
        }
    }

    fn line(error: &str, reason: impl Into<String>) -> Line {
        Line::Error(ErrorLine::new(error, reason))
    }
}

/// `d` in whole µs, saturating.
fn micros(d: Duration) -> u64 {
    u64::try_from(d.as_micros()).unwrap_or(u64::MAX)
}

/// One parsed command line.
#[derive(Clone, PartialEq, Eq, Debug)]
pub enum Command {
    /// `acquire SESSION`.
    Acquire(String),
    /// `renew SESSION`.
    Renew(String),
    /// `release SESSION`.
    Release(String),
    /// `fork exit SESSION`.
    ForkExit(String),
    /// `fork linger`.
    ForkLinger,
    /// `go`.
    Go,
    /// `quit`.
    Quit,
}

/// The commands, for error messages.
const COMMANDS: &str =
    "acquire SESSION, renew SESSION, release SESSION, fork exit SESSION, fork linger, go, quit";

impl Command {
    /// Parses one line (surrounding whitespace ignored; SESSION is the rest of the line, so it
    /// may hold spaces).
    ///
    /// # Errors
    /// A message naming the line and listing the commands.
    pub fn parse(line: &str) -> Result<Command, String> {
        let line = line.trim();
        let (verb, rest) = line.split_once(' ').unwrap_or((line, ""));
        let rest = rest.trim();
        let session = |make: fn(String) -> Command| {
            if rest.is_empty() {
                Err(format!(
                    "`{verb}` needs a SESSION; the commands are {COMMANDS}"
                ))
            } else {
                Ok(make(rest.to_owned()))
            }
        };
        match (verb, rest) {
            ("acquire", _) => session(Command::Acquire),
            ("renew", _) => session(Command::Renew),
            ("release", _) => session(Command::Release),
            ("fork", "linger") => Ok(Command::ForkLinger),
            ("fork", _) => match rest.split_once(' ') {
                Some(("exit", session)) if !session.trim().is_empty() => {
                    Ok(Command::ForkExit(session.trim().to_owned()))
                }
                _ => Err(format!(
                    "unknown command `{line}`: `fork exit SESSION` or `fork linger`"
                )),
            },
            ("go", "") => Ok(Command::Go),
            ("quit", "") => Ok(Command::Quit),
            _ => Err(format!(
                "unknown command `{line}`; the commands are {COMMANDS}"
            )),
        }
    }
}

/// stdin and stdout of the process, shared by the command loop and the hooks (a pause reads
/// stdin from inside a decision).
pub struct Console {
    input: Mutex<Box<dyn BufRead + Send>>,
    output: Mutex<Box<dyn Write + Send>>,
}

impl std::fmt::Debug for Console {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Console")
    }
}

impl Console {
    /// A console over `input` and `output`.
    pub fn new(input: Box<dyn BufRead + Send>, output: Box<dyn Write + Send>) -> Self {
        Console {
            input: Mutex::new(input),
            output: Mutex::new(output),
        }
    }

    /// Writes `line` as one JSON line and flushes. A closed stdout is logged, not fatal: the
    /// next read sees EOF.
    pub fn emit(&self, line: &Line) {
        let mut output = self.output.lock().unwrap_or_else(|e| e.into_inner());
        let written = serde_json::to_string(line)
            .map_err(std::io::Error::other)
            .and_then(|text| writeln!(output, "{text}"))
            .and_then(|()| output.flush());
        if let Err(error) = written {
            eprintln!("leasesim flock: cannot write to stdout: {error}");
        }
    }

    /// The next line of stdin without its line end, `None` at EOF (or on a read error,
    /// logged). A line that is not UTF-8 is answered with a `bad-command` error line and
    /// skipped: one bad byte never ends the process (and its holds).
    pub fn read_line(&self) -> Option<String> {
        loop {
            let mut bytes = Vec::new();
            let read = {
                let mut input = self.input.lock().unwrap_or_else(|e| e.into_inner());
                input.read_until(b'\n', &mut bytes)
            };
            match read {
                Ok(0) => return None,
                Ok(_) => match String::from_utf8(bytes) {
                    Ok(line) => return Some(line.trim_end_matches(['\n', '\r']).to_owned()),
                    Err(e) => self.emit(&ErrorLine::line(
                        "bad-command",
                        format!("a line of stdin is not UTF-8 ({e}); it is ignored"),
                    )),
                },
                Err(error) => {
                    eprintln!("leasesim flock: cannot read stdin: {error}");
                    return None;
                }
            }
        }
    }

    /// Reads stdin until `go`; every other line is answered with a `paused` error. EOF while
    /// paused ends the process at once with [`CRASH_EXIT_CODE`], without finishing the
    /// decision: closing stdin aborts, it never completes a grant.
    fn wait_for_go(&self, point: FlockPoint) {
        loop {
            let Some(line) = self.read_line() else {
                eprintln!("leasesim flock: stdin closed while paused: exiting mid-decision");
                // SAFETY: `_exit` ends the process at once, like `--crash-at`.
                unsafe { libc::_exit(CRASH_EXIT_CODE) };
            };
            if line.trim() == "go" {
                return;
            }
            self.emit(&ErrorLine::line(
                "paused",
                format!(
                    "paused at {}: only `go` continues, `{line}` is ignored",
                    point_name(point)
                ),
            ));
        }
    }
}

/// The driver's [`FlockHooks`]: an event for `lock-busy`, a pause or a crash where the
/// arguments ask. In a forked child (another pid) they do nothing: the child must neither
/// read the parent's stdin nor exit with the crash code.
#[derive(Debug)]
struct DriverHooks {
    pid: u32,
    pause_at: BTreeSet<FlockPoint>,
    crash_at: Option<FlockPoint>,
    console: Arc<Console>,
}

impl FlockHooks for DriverHooks {
    fn at(&self, point: FlockPoint, session: &SessionId) {
        if std::process::id() != self.pid {
            return;
        }
        let session = session.as_str().to_owned();
        let name = point_name(point).to_owned();
        if point == FlockPoint::LockBusy {
            self.console.emit(&Line::Event(Event::LockBusy {
                session: session.clone(),
            }));
        }
        if self.crash_at == Some(point) {
            self.console.emit(&Line::Event(Event::Crashing {
                point: name,
                session,
            }));
            // SAFETY: `_exit` ends the process at once; nothing is left to run. No clean-up
            // on purpose: this is the crash a process test asks for.
            unsafe { libc::_exit(CRASH_EXIT_CODE) };
        }
        if self.pause_at.contains(&point) {
            self.console.emit(&Line::Event(Event::Paused {
                point: name,
                session,
            }));
            self.console.wait_for_go(point);
        }
    }
}

/// The process's state: the lease authority, the last lease got per session, the lingering
/// children.
struct Driver {
    runtime: tokio::runtime::Runtime,
    lease: FlockLease,
    owner: Owner,
    console: Arc<Console>,
    leases: BTreeMap<String, Lease>,
    lingering: Vec<libc::pid_t>,
}

/// Runs `leasesim flock` over this process's stdin and stdout, as [`run`] does.
///
/// # Errors
/// As [`run`].
pub fn main(args: FlockArgs) -> Result<(), StartError> {
    let stdin = Box::new(std::io::BufReader::new(std::io::stdin()));
    let console = Arc::new(Console::new(stdin, Box::new(std::io::stdout())));
    run(args, console)
}

/// Runs `leasesim flock` over `console`: opens the lease directory, emits `ready`, then runs
/// commands until `quit` or EOF. Call it only from a single-threaded process: the `fork`
/// commands fork, and a fork copies only the calling thread.
///
/// # Errors
/// [`StartError::BadInput`] on a mutant of another backend or a directory or TTL
/// [`FlockLease::open`] refuses; [`StartError::Harness`] when the runtime cannot start or the
/// directory cannot be read. Either is also written as an error line.
pub fn run(args: FlockArgs, console: Arc<Console>) -> Result<(), StartError> {
    let mut driver = match Driver::open(args, console.clone()) {
        Ok(driver) => driver,
        Err((start, error)) => {
            eprintln!("error: {}", error.reason);
            console.emit(&Line::Error(error));
            return Err(start);
        }
    };
    console.emit(&Line::Event(Event::Ready {
        pid: std::process::id(),
    }));
    while let Some(line) = console.read_line() {
        if line.trim().is_empty() {
            continue;
        }
        match Command::parse(&line) {
            Ok(Command::Quit) => {
                driver.reap_lingering();
                console.emit(&Line::Reply(Reply::ok(Verb::Quit, None)));
                return Ok(());
            }
            Ok(command) => {
                if driver.execute(command) == Step::ForkedChildDone {
                    // A careless child: drop everything the parent opened, then leave.
                    drop(driver);
                    // SAFETY: ends the forked child at once, without the parent's atexit
                    // handlers or stdio flushes.
                    unsafe { libc::_exit(0) }
                }
            }
            Err(reason) => console.emit(&ErrorLine::line("bad-command", reason)),
        }
    }
    driver.reap_lingering();
    Ok(())
}

/// What the command loop does after a command.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Step {
    /// Read the next command.
    Next,
    /// This is the child of `fork exit`, done with its release: drop everything and exit.
    ForkedChildDone,
}

impl Driver {
    /// The runtime and the lease authority of `args`.
    fn open(args: FlockArgs, console: Arc<Console>) -> Result<Driver, (StartError, ErrorLine)> {
        if let Some(mutant) = args.mutant
            && mutant.backend() != Some("flock")
        {
            let reason = format!(
                "mutant `{}` is planted in {}, not in the flock backend: it would change nothing here; the flock mutants are {}",
                mutant.name(),
                mutant.backend().map_or_else(
                    || "the journal, ledger or service layer".to_owned(),
                    |backend| format!("the {backend} backend")
                ),
                flock_mutants()
            );
            return Err((StartError::BadInput, ErrorLine::new("bad-input", reason)));
        }
        // One thread only: the process forks, and a fork copies only the calling thread.
        let runtime = tokio::runtime::Builder::new_current_thread()
            .build()
            .map_err(|error| {
                let reason = format!("cannot start the async runtime: {error}");
                (StartError::Harness, ErrorLine::new("io", reason))
            })?;
        let hooks = DriverHooks {
            pid: std::process::id(),
            pause_at: args.pause_at.iter().copied().collect(),
            crash_at: args.crash_at,
            console: console.clone(),
        };
        let mut config = FlockLeaseConfig::new(args.dir, args.ttl);
        config.lock_wait = args.lock_wait;
        config.mutant = args.mutant;
        config.hooks = Some(Arc::new(hooks));
        let lease = FlockLease::open(config).map_err(|error| {
            let start = match error {
                FlockError::Io { .. } => StartError::Harness,
                _ => StartError::BadInput,
            };
            (start, ErrorLine::new("bad-input", error.to_string()))
        })?;
        Ok(Driver {
            runtime,
            lease,
            owner: Owner::new(args.owner, args.incarnation),
            console,
            leases: BTreeMap::new(),
            lingering: Vec::new(),
        })
    }

    /// Runs one command (not `quit`) and emits its reply (none in a forked child).
    fn execute(&mut self, command: Command) -> Step {
        let line = match command {
            Command::Acquire(session) => Line::Reply(self.acquire(&session)),
            Command::Renew(session) => Line::Reply(self.renew(&session)),
            Command::Release(session) => Line::Reply(self.release(&session)),
            Command::ForkExit(session) => match self.fork_exit(&session) {
                Some(reply) => Line::Reply(reply),
                None => return Step::ForkedChildDone,
            },
            Command::ForkLinger => Line::Reply(self.fork_linger()),
            Command::Go => ErrorLine::line("not-paused", "`go` outside a pause: nothing waits"),
            Command::Quit => Line::Reply(Reply::ok(Verb::Quit, None)),
        };
        self.console.emit(&line);
        Step::Next
    }

    fn acquire(&mut self, session: &str) -> Reply {
        let id = match SessionId::new(session) {
            Ok(id) => id,
            Err(error) => return Reply::refused(Verb::Acquire, session, &error),
        };
        let outcome = self.runtime.block_on(self.lease.acquire(&id, &self.owner));
        if let Ok(lease) = &outcome {
            self.leases.insert(session.to_owned(), lease.clone());
        }
        Reply::granted(Verb::Acquire, session, &outcome)
    }

    fn renew(&mut self, session: &str) -> Reply {
        let Some(lease) = self.leases.get(session) else {
            return no_lease(Verb::Renew, session);
        };
        let outcome = self.runtime.block_on(self.lease.renew(lease));
        if let Ok(lease) = &outcome {
            self.leases.insert(session.to_owned(), lease.clone());
        }
        Reply::granted(Verb::Renew, session, &outcome)
    }

    fn release(&mut self, session: &str) -> Reply {
        let Some(lease) = self.leases.get(session) else {
            return no_lease(Verb::Release, session);
        };
        match self.runtime.block_on(self.lease.release(lease)) {
            Ok(()) => Reply::ok(Verb::Release, Some(session)),
            Err(error) => Reply::refused(Verb::Release, session, &error),
        }
    }

    /// `fork exit SESSION`: the child releases the inherited lease value and returns `None`
    /// (the command loop then drops the whole driver — every open file of the authority —
    /// and `_exit(0)`s); the parent reaps it and returns the reply.
    fn fork_exit(&mut self, session: &str) -> Option<Reply> {
        let Some(lease) = self.leases.get(session).cloned() else {
            return Some(no_lease(Verb::ForkExit, session));
        };
        // SAFETY: the process is single-threaded (current-thread runtime, no blocking pool),
        // so the child is a full copy and may run any code before it exits.
        match unsafe { libc::fork() } {
            -1 => Some(fork_failed(Verb::ForkExit, Some(session))),
            0 => {
                let outcome = self.runtime.block_on(self.lease.release(&lease));
                eprintln!(
                    "leasesim flock: forked child {} released {session}: {outcome:?}",
                    std::process::id()
                );
                // The parent's lingering children are the parent's to kill.
                self.lingering.clear();
                None
            }
            child => Some(Reply {
                child_pid: Some(child),
                ..reaped(child, session)
            }),
        }
    }

    /// `fork linger`: the child sleeps until it is killed (by this process at `quit`, at EOF or
    /// on drop; by whoever kills it otherwise).
    fn fork_linger(&mut self) -> Reply {
        // SAFETY: the process is single-threaded (see `fork_exit`).
        match unsafe { libc::fork() } {
            -1 => fork_failed(Verb::ForkLinger, None),
            0 => linger(),
            child => {
                self.lingering.push(child);
                Reply {
                    child_pid: Some(child),
                    ..Reply::ok(Verb::ForkLinger, None)
                }
            }
        }
    }

    /// Kills (SIGKILL) and reaps every lingering child.
    fn reap_lingering(&mut self) {
        for child in std::mem::take(&mut self.lingering) {
            // SAFETY: plain syscalls on a child of this process, reaped right after.
            unsafe {
                libc::kill(child, libc::SIGKILL);
                libc::waitpid(child, std::ptr::null_mut(), 0);
            }
        }
    }
}

impl Drop for Driver {
    fn drop(&mut self) {
        self.reap_lingering();
    }
}

/// The lingering child's whole life: sleep until killed, holding every descriptor it
/// inherited. Nothing ties it to its parent (no death signal): a careless child outlives a
/// parent that is SIGKILLed, and so do its copies of the parent's open file descriptions.
fn linger() -> ! {
    loop {
        // SAFETY: a plain syscall in a single-threaded child.
        unsafe { libc::pause() };
    }
}

/// Waits for `child` and describes how it ended.
fn reaped(child: libc::pid_t, session: &str) -> Reply {
    let mut status = 0;
    // SAFETY: waits for a child of this process; `status` is a valid out pointer.
    let waited = unsafe { libc::waitpid(child, &mut status, 0) };
    if waited != child {
        let error = std::io::Error::last_os_error();
        let reason = format!("waitpid({child}): {error}");
        return Reply::failed(Verb::ForkExit, Some(session), Failure::Fork, reason);
    }
    let mut reply = Reply::ok(Verb::ForkExit, Some(session));
    if libc::WIFEXITED(status) {
        reply.exit_code = Some(libc::WEXITSTATUS(status));
    } else if libc::WIFSIGNALED(status) {
        reply.signal = Some(libc::WTERMSIG(status));
    }
    reply
}

fn fork_failed(verb: Verb, session: Option<&str>) -> Reply {
    let reason = format!("fork: {}", std::io::Error::last_os_error());
    Reply::failed(verb, session, Failure::Fork, reason)
}

fn no_lease(verb: Verb, session: &str) -> Reply {
    let reason = format!("this process holds no lease of `{session}`: acquire it first");
    Reply::failed(verb, Some(session), Failure::NoLease, reason)
}

/// The names of the flock mutants, comma-separated.
fn flock_mutants() -> String {
    let names: Vec<&str> = Mutant::ALL
        .iter()
        .filter(|mutant| mutant.backend() == Some("flock"))
        .map(|mutant| mutant.name())
        .collect();
    names.join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Output shared with the test after the console is done with it.
    #[derive(Clone, Default)]
    struct Shared(Arc<Mutex<Vec<u8>>>);

    impl Write for Shared {
        fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(bytes);
            Ok(bytes.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn a_line_that_is_not_utf8_is_answered_and_skipped() {
        let input: &[u8] = b"acquire \xff\xfe\nrenew s1\n";
        let output = Shared::default();
        let console = Console::new(Box::new(input), Box::new(output.clone()));
        assert_eq!(console.read_line().as_deref(), Some("renew s1"));
        assert_eq!(console.read_line(), None);
        let written = String::from_utf8(output.0.lock().unwrap().clone()).unwrap();
        assert!(
            written.contains("bad-command") && written.contains("not UTF-8"),
            "{written}"
        );
    }

    #[test]
    fn commands_parse_and_sessions_keep_their_spaces() {
        assert_eq!(
            Command::parse("acquire s1"),
            Ok(Command::Acquire("s1".into()))
        );
        assert_eq!(
            Command::parse("  renew a b \n"),
            Ok(Command::Renew("a b".into()))
        );
        assert_eq!(
            Command::parse("release ../x"),
            Ok(Command::Release("../x".into()))
        );
        assert_eq!(
            Command::parse("fork exit s1"),
            Ok(Command::ForkExit("s1".into()))
        );
        assert_eq!(Command::parse("fork linger"), Ok(Command::ForkLinger));
        assert_eq!(Command::parse("go"), Ok(Command::Go));
        assert_eq!(Command::parse("quit"), Ok(Command::Quit));
    }

    #[test]
    fn bad_commands_are_named_with_the_list() {
        for line in [
            "acquire",
            "fork",
            "fork exit",
            "fork now",
            "go now",
            "hold s1",
            "",
        ] {
            let error = Command::parse(line).expect_err(line);
            assert!(
                error.contains("acquire SESSION") || error.contains("fork exit"),
                "{error}"
            );
        }
    }

    #[test]
    fn points_round_trip_through_their_names() {
        for point in POINTS {
            assert_eq!(parse_point(point_name(point)), Ok(point));
        }
        let error = parse_point("record_read").unwrap_err();
        assert!(error.contains("record-read"), "{error}");
    }

    #[test]
    fn reply_lines_read_back_as_the_same_line() {
        let lines = [
            Line::Reply(Reply::granted(
                Verb::Acquire,
                "s1",
                &Err(LeaseError::Held {
                    holder_token: Some(2),
                }),
            )),
            Line::Reply(Reply::ok(Verb::Quit, None)),
            Line::Event(Event::Paused {
                point: "record-read".into(),
                session: "s1".into(),
            }),
            ErrorLine::line("bad-command", "unknown command `x`"),
        ];
        for line in lines {
            let text = serde_json::to_string(&line).unwrap();
            assert_eq!(serde_json::from_str::<Line>(&text).unwrap(), line, "{text}");
        }
        let held = serde_json::to_string(&Reply::refused(
            Verb::Acquire,
            "s1",
            &LeaseError::Held {
                holder_token: Some(2),
            },
        ))
        .unwrap();
        assert_eq!(
            held,
            r#"{"reply":"acquire","session":"s1","ok":false,"error":"held","holder_token":2}"#
        );
    }

    #[test]
    fn a_mutant_of_another_backend_is_refused_with_exit_2() {
        let dir = std::env::temp_dir();
        let args = FlockArgs {
            dir,
            owner: "a".into(),
            incarnation: 0,
            ttl: Duration::from_secs(1),
            lock_wait: Duration::from_secs(1),
            mutant: Some(Mutant::AcquireCheckThenAct),
            pause_at: Vec::new(),
            crash_at: None,
        };
        let output = SharedBuffer::default();
        let console = Arc::new(Console::new(
            Box::new(std::io::Cursor::new(Vec::new())),
            Box::new(output.clone()),
        ));
        assert_eq!(run(args, console), Err(StartError::BadInput));
        let text = output.text();
        let line: Line = serde_json::from_str(text.trim()).unwrap();
        let Line::Error(error) = line else {
            panic!("not an error line: {text}")
        };
        assert!(error.reason.contains("unlink-on-release"), "{text}");
        assert!(error.reason.contains("acquire-check-then-act"), "{text}");
    }

    /// A `Write` whose bytes the test reads back.
    #[derive(Clone, Default)]
    struct SharedBuffer(Arc<Mutex<Vec<u8>>>);

    impl SharedBuffer {
        fn text(&self) -> String {
            String::from_utf8(self.0.lock().unwrap().clone()).unwrap()
        }
    }

    impl Write for SharedBuffer {
        fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(bytes);
            Ok(bytes.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
}
