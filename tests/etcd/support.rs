//! One real etcd per test binary ([`etcd`]): `/usr/bin/etcd` on free 127.0.0.1 ports, its
//! data in a temporary directory, started within [`START_LIMIT`], and always reaped.
//!
//! Reaping: etcd is spawned by a thread that lives as long as the process and waits on it,
//! with `PR_SET_PDEATHSIG = SIGKILL`, so the kernel kills it whenever the test process ends
//! (a panic, a SIGKILL); at a normal exit an `atexit` handler kills it and removes its data.
//! Real processes run in real time, so this module reads the real clock.
#![allow(clippy::disallowed_types, clippy::disallowed_methods)]

use std::net::TcpListener;
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::Stdio;
use std::sync::{Arc, OnceLock, mpsc};
use std::time::{Duration, Instant};

use leasesim::clock::RealClock;
use leasesim::lease::etcd::{EtcdLease, EtcdLeaseConfig};
use leasesim::live::etcd::etcd_command;
use leasesim::mutant::Mutant;

/// The longest etcd may take to answer after it is spawned.
pub const START_LIMIT: Duration = Duration::from_secs(20);

/// The TTL the tests ask of etcd: above etcd's 2 s minimum, so that the suite's tightest
/// margin (a quarter of the suite's TTL, `renew_keeps_token_and_extends_expiry`) minus the
/// [`EXPIRY_SLACK`](leasesim::lease::etcd::EXPIRY_SLACK) it is given is still 250 ms.
pub const TTL: Duration = Duration::from_secs(4);

/// The running etcd.
pub struct Etcd {
    /// Its client endpoint, `127.0.0.1:port`.
    pub endpoint: String,
    pid: i32,
    dir: PathBuf,
}

static ETCD: OnceLock<Result<Etcd, String>> = OnceLock::new();

/// The etcd of this test binary, started on first use.
///
/// # Panics
/// When etcd cannot be started or does not answer within [`START_LIMIT`] (with its log).
pub fn etcd() -> &'static Etcd {
    match ETCD.get_or_init(start) {
        Ok(etcd) => etcd,
        Err(e) => panic!("{e}"),
    }
}

/// An `EtcdLease` on this binary's etcd, asking for `ttl`, with `mutant`.
pub async fn lease(ttl: Duration, mutant: Option<Mutant>) -> EtcdLease {
    let config = EtcdLeaseConfig {
        endpoint: etcd().endpoint.clone(),
        ttl,
        call_timeout: Duration::from_secs(5),
        mutant,
    };
    EtcdLease::connect(config, Arc::new(RealClock::new()))
        .await
        .expect("an EtcdLease on the test's etcd")
}

/// A raw etcd client on this binary's etcd, to look at the keys themselves.
pub async fn raw_client() -> etcd_client::Client {
    etcd_client::Client::connect([format!("http://{}", etcd().endpoint)], None)
        .await
        .expect("an etcd client")
}

/// A port nobody listens on now (the kernel's pick for port 0).
fn free_port() -> Result<u16, String> {
    let listener =
        TcpListener::bind("127.0.0.1:0").map_err(|e| format!("bind 127.0.0.1:0: {e}"))?;
    Ok(listener.local_addr().map_err(|e| e.to_string())?.port())
}

fn start() -> Result<Etcd, String> {
    let dir = tempfile::Builder::new()
        .prefix("leasesim-etcd-")
        .tempdir()
        .map_err(|e| format!("a temporary directory for etcd: {e}"))?
        .keep();
    let (client, peer) = (free_port()?, free_port()?);
    let endpoint = format!("127.0.0.1:{client}");
    let log_path = dir.join("etcd.log");
    let log = std::fs::File::create(&log_path).map_err(|e| format!("{log_path:?}: {e}"))?;
    let mut command = etcd_command(&dir.join("data"), client, peer);
    command
        .stdin(Stdio::null())
        .stdout(log.try_clone().map_err(|e| e.to_string())?)
        .stderr(log);
    // SAFETY: prctl is async-signal-safe; nothing else runs between fork and exec.
    unsafe {
        command.pre_exec(|| {
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let (spawned, pid) = mpsc::channel();
    std::thread::Builder::new()
        .name("etcd-parent".into())
        .spawn(move || match command.spawn() {
            Ok(mut child) => {
                let _ = spawned.send(Ok(child.id()));
                let _ = child.wait();
            }
            Err(e) => {
                let _ = spawned.send(Err(format!(
                    "spawn {:?}: {e}",
                    leasesim::live::etcd::ETCD_BINARY
                )));
            }
        })
        .map_err(|e| format!("a thread for etcd: {e}"))?;
    let pid = pid.recv().map_err(|e| e.to_string())??;
    let etcd = Etcd {
        endpoint,
        pid: i32::try_from(pid).expect("pids fit in i32"),
        dir,
    };
    // SAFETY: registering a plain `extern "C" fn` with no captured state.
    unsafe { libc::atexit(stop_at_exit) };
    wait_until_ready(&etcd.endpoint).map_err(|e| {
        let log = std::fs::read_to_string(&log_path).unwrap_or_default();
        format!("etcd on {}: {e}; its log:\n{log}", etcd.endpoint)
    })?;
    Ok(etcd)
}

/// Waits (at most [`START_LIMIT`]) for etcd to answer a status call, on a runtime of its
/// own in a thread of its own (the caller may be inside a test's runtime).
fn wait_until_ready(endpoint: &str) -> Result<(), String> {
    let url = format!("http://{endpoint}");
    std::thread::scope(|scope| {
        scope
            .spawn(|| {
                let runtime = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                    .map_err(|e| e.to_string())?;
                let deadline = Instant::now() + START_LIMIT;
                let mut last = String::from("never tried");
                while Instant::now() < deadline {
                    let attempt = runtime.block_on(async {
                        let options = etcd_client::ConnectOptions::new()
                            .with_connect_timeout(Duration::from_millis(500))
                            .with_timeout(Duration::from_millis(500));
                        let mut client =
                            etcd_client::Client::connect([url.as_str()], Some(options)).await?;
                        client.status().await
                    });
                    match attempt {
                        Ok(_) => return Ok(()),
                        Err(e) => last = e.to_string(),
                    }
                    std::thread::sleep(Duration::from_millis(100));
                }
                Err(format!("no answer within {START_LIMIT:?} (last: {last})"))
            })
            .join()
            .map_err(|_| "the readiness check panicked".to_string())?
    })
}

extern "C" fn stop_at_exit() {
    if let Some(Ok(etcd)) = ETCD.get() {
        // SAFETY: plain syscalls on the pid this process spawned (and has not reaped: its
        // parent thread is still waiting on it).
        unsafe {
            libc::kill(etcd.pid, libc::SIGKILL);
            libc::waitpid(etcd.pid, std::ptr::null_mut(), 0);
        }
        let _ = std::fs::remove_dir_all(&etcd.dir);
    }
}
