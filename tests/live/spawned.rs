//! Real processes of the replica and service tests: a kill-on-drop guard, bounded waits, the
//! services on free loopback ports, a small run file.

// Real processes on real time: a live test waits for them and reads the machine's clock.
#![allow(clippy::disallowed_methods, clippy::disallowed_types)]
#![allow(dead_code)]

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::Duration;

use leasesim::history::Line;
use leasesim::live::lines::read_line_file;
use leasesim::live::truth::{EPOCH_ENV, TrueClock};
use leasesim_testkit::leasesim;

/// Longest wait for a process to print its first line or to exit.
pub const WAIT: Duration = Duration::from_secs(30);

/// A child killed (SIGKILL) and reaped when dropped, also when a test fails.
pub struct Spawned {
    child: Option<Child>,
    /// The first line it printed on stdout.
    pub banner: String,
}

impl Spawned {
    /// Starts `command` (stdout piped, stderr to a file next to nothing: inherited) and reads
    /// its first stdout line, within [`WAIT`].
    pub fn start(mut command: Command) -> Self {
        let mut child = command
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("spawn leasesim");
        let stdout = child.stdout.take().unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let mut reader = BufReader::new(stdout);
            let mut line = String::new();
            let _ = reader.read_line(&mut line);
            let _ = tx.send(line);
            // Drain the rest so the child never blocks on a full pipe.
            let mut sink = String::new();
            while reader.read_line(&mut sink).is_ok_and(|n| n > 0) {
                sink.clear();
            }
        });
        let mut spawned = Spawned {
            child: Some(child),
            banner: String::new(),
        };
        spawned.banner = rx
            .recv_timeout(WAIT)
            .unwrap_or_else(|_| panic!("no first line within {WAIT:?}"));
        spawned
    }

    /// The process id.
    pub fn pid(&self) -> i32 {
        self.child.as_ref().unwrap().id() as i32
    }

    /// Sends SIGTERM.
    pub fn terminate(&self) {
        let pid = rustix::process::Pid::from_raw(self.pid()).unwrap();
        rustix::process::kill_process(pid, rustix::process::Signal::TERM).unwrap();
    }

    /// Waits for the exit, within `limit` (then kills it and panics).
    pub fn wait(&mut self, limit: Duration) -> ExitStatus {
        let child = self.child.as_mut().unwrap();
        let deadline = std::time::Instant::now() + limit;
        loop {
            if let Some(status) = child.try_wait().unwrap() {
                self.child = None;
                return status;
            }
            if std::time::Instant::now() > deadline {
                panic!("the process did not exit within {limit:?}");
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// SIGTERM, then the exit status.
    pub fn stop(&mut self) -> ExitStatus {
        self.terminate();
        self.wait(WAIT)
    }
}

impl Drop for Spawned {
    fn drop(&mut self) {
        if let Some(child) = self.child.as_mut() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// A live run's directory and epoch.
pub struct Run {
    pub dir: tempfile::TempDir,
    pub truth: TrueClock,
}

impl Run {
    /// A run whose run file has `replicas` replicas contending for `sessions` with a
    /// generated workload that never shuts down by itself, a `ttl_ms` TTL, and `mutant`.
    pub fn new(replicas: u32, sessions: &[&str], ttl_ms: u64, mutant: Option<&str>) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let run = serde_json::json!({
            "v": 2,
            "scenario": "live-test",
            "seed": 1,
            "world": {
                "replicas": replicas,
                "sessions": sessions,
                "ttl_ms": ttl_ms,
                "skew_margin_percent": 10,
                "duration_s": 30,
                "call_timeout_ms": 500,
                "latency_ms": [1, 5],
                "backend": "grpc"
            },
            "schedule": {"v": 1, "faults": []},
            "workload": {"generated": {
                "appends": [1, 3], "think_ms": [20, 100], "shutdown_chance": [0, 1]
            }},
            "mutant": mutant,
            "liveness_phase": false,
            "expect": {"hold": [], "violate": [], "coverage": []}
        });
        std::fs::write(dir.path().join("run.json"), run.to_string()).unwrap();
        Run {
            dir,
            truth: TrueClock::start(),
        }
    }

    pub fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    /// `leasesim ARGS…` with the run's epoch set.
    pub fn command(&self, args: &[&str]) -> Command {
        let mut command = leasesim!().command();
        command
            .args(args)
            .env(EPOCH_ENV, self.truth.epoch_text())
            .env_remove("LEASESIM_LIVE_DRIFT_PPM")
            .env_remove("RUST_LOG");
        command
    }

    /// `leasesim serve SERVICE` in live mode on a free port; returns it and its address.
    pub fn serve(&self, service: &str, boot: u64) -> (Spawned, String) {
        let data = self.path(&format!("data-{service}"));
        let history = self.path(&format!("{service}-{boot}.jsonl"));
        let mut command = self.command(&["serve", service, "--listen", "127.0.0.1:0"]);
        command
            .arg("--data")
            .arg(&data)
            .arg("--run")
            .arg(self.path("run.json"))
            .arg("--history")
            .arg(&history)
            .arg("--boot")
            .arg(boot.to_string());
        let spawned = Spawned::start(command);
        let prefix = format!("{service} service listening on ");
        let addr = spawned
            .banner
            .strip_prefix(&prefix)
            .and_then(|rest| rest.split_whitespace().next())
            .unwrap_or_else(|| panic!("unexpected first line: {:?}", spawned.banner))
            .to_owned();
        (spawned, addr)
    }

    /// `leasesim replica` K, incarnation I, against `lease` and `ledger`.
    pub fn replica_command(&self, k: u32, incarnation: u64, lease: &str, ledger: &str) -> Command {
        let history = self.path(&format!("replica-{k}-{incarnation}.jsonl"));
        let mut command = self.command(&["replica", "--run"]);
        command
            .arg(self.path("run.json"))
            .args(["--name", &format!("replica-{k}")])
            .args(["--incarnation", &incarnation.to_string()])
            .args(["--lease", lease, "--ledger", ledger])
            .arg("--history")
            .arg(history);
        command
    }
}

/// Every line of a per-process file (a torn tail is a failure here: every process stopped
/// gracefully).
pub fn lines_of(path: &Path) -> Vec<Line> {
    let read = read_line_file(path).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        read.torn_tail_bytes,
        None,
        "{} has a torn tail",
        path.display()
    );
    read.lines
}
