//! The run's processes: starting each boot of a host (its command line, its clock, its
//! address), noticing one that exited by itself (a harness error, but for a replica's exit 0),
//! the nemesis's SIGKILL, and the stop at the end (SIGTERM, then SIGKILL after
//! [`stop_bound`]).

use std::net::SocketAddr;
use std::path::Path;
use std::process::{Command, ExitStatus};
use std::time::Duration;

use super::{Backend, HostState, LiveError, Run, harness};
use crate::history::{NemesisAction, Phase, hosts, micros};
use crate::live::merge::ProcessFile;
use crate::live::process::DRIFT_ENV;
use crate::live::spawn::{Proc, wait_for_address};
use crate::live::target::LeaseTarget;
use crate::live::truth::EPOCH_ENV;
use crate::live::{etcd, faketime};

/// How long a service may take to print its address.
const START_BOUND: Duration = Duration::from_secs(10);
/// How long a process may take to stop after SIGTERM before it is SIGKILLed, in a run of
/// TTL `ttl`: the SIGTERM may find a replica mid-renewal, in a call as long as a TTL, and its
/// graceful shutdown (the clean-up append, then the release) gives up by itself only after
/// two TTLs and 5 s ([`crate::live::replica`]); one second more for it to exit. A fixed bound
/// shorter than that SIGKILLed replicas of long-TTL runs in the middle of their shutdown.
pub(super) fn stop_bound(ttl: Duration) -> Duration {
    ttl * 2 + Duration::from_secs(6)
}
/// How long a replica that exited by itself stays down before it is started again (as the
/// world restarts a replica that shut down gracefully).
const SELF_STOPPED_RESTART: Duration = Duration::from_secs(1);

impl Run<'_> {
    /// Notes children that exited by themselves ([`Self::reap_exited`]); a replica that
    /// exited 0 is started again a second later, as the world restarts it.
    pub(super) fn supervise(&mut self) -> Result<(), LiveError> {
        if let Some(failed) = self.reap_exited() {
            return Err(LiveError::Harness(failed));
        }
        let now = self.now();
        let restart: Vec<String> = self
            .hosts
            .iter()
            .filter(|(host, state)| {
                state.proc.is_none()
                    && !state.crashed
                    && host.starts_with(hosts::REPLICA_PREFIX)
                    && state
                        .exited_at
                        .is_some_and(|at| now >= at + SELF_STOPPED_RESTART)
            })
            .map(|(host, _)| host.clone())
            .collect();
        for host in restart {
            self.start(&host)?;
        }
        Ok(())
    }

    /// Reaps the children that exited by themselves, each noted (a progress line, its file
    /// for the merge, the time). Only a replica's exit 0 is one the run expects (a generated
    /// workload's own graceful end). Any other — a service that ended, a replica that
    /// failed, either killed by a signal the nemesis did not send — is returned, the first
    /// one, as the harness error naming the host and its exit status: the run went on
    /// without a process it believes is there, so its history can have no verdict.
    fn reap_exited(&mut self) -> Option<String> {
        let now = self.now();
        let mut ended = Vec::new();
        let mut failed = None;
        for (host, state) in &mut self.hosts {
            if let Some(proc) = state.proc.as_mut()
                && let Some(status) = proc.exited()
            {
                println!(
                    "  {:>8.3} s {host} (boot {}) exited by itself: {status}; log {}",
                    now.as_secs_f64(),
                    proc.boot,
                    proc.log.display()
                );
                ended.push(process_file(proc, now, "exited"));
                if let Some(error) = unexpected_exit(host, proc.boot, &proc.log, status) {
                    failed.get_or_insert(error);
                }
                state.proc = None;
                state.exited_at = Some(now);
            }
        }
        self.ended.extend(ended);
        failed
    }

    /// Starts the next boot of `host`.
    pub(super) fn start(&mut self, host: &str) -> Result<(), LiveError> {
        if self.hosts.get(host).is_some_and(|h| h.proc.is_some()) {
            return Ok(());
        }
        let boot = self.hosts.get(host).map_or(0, |h| h.boots);
        let history = self.out.join(format!("processes/{host}-{boot}.jsonl"));
        let log = self.out.join(format!("logs/{host}-{boot}.log"));
        let mut command = self.command(host, boot, &history)?;
        command.env(EPOCH_ENV, self.truth.epoch_text());
        let clock = self.clocks.get(host).copied().unwrap_or_default();
        command.env(DRIFT_ENV, clock.drift_ppm.to_string());
        if let Some(library) = &self.faketime
            && self.clocks.contains_key(host)
        {
            let spec = self.out.join(format!("data/{host}.faketime"));
            faketime::start_under(&mut command, library, clock, &spec)
                .map_err(harness("the faketime file"))?;
        }
        let child = self.spawner.spawn(command, &log).map_err(harness(host))?;
        let mut proc = Proc::new(host, boot, history, log, child);
        let mut detail = format!("boot {boot}, pid {}", proc.pid());
        if self.services().iter().any(|s| s == host) {
            let addr = self.service_address(host, &mut proc)?;
            detail.push_str(&format!(", on {addr}"));
            self.addresses.insert(host.to_owned(), addr);
            for ((_, service), link) in &self.links {
                if service == host {
                    link.set_upstream(addr);
                }
            }
        }
        let state = self.hosts.entry(host.to_owned()).or_insert(HostState {
            proc: None,
            boots: 0,
            paused: false,
            crashed: false,
            exited_at: None,
        });
        state.proc = Some(proc);
        state.boots = boot + 1;
        state.paused = false;
        state.crashed = false;
        state.exited_at = None;
        if boot > 0 || !host.starts_with(hosts::REPLICA_PREFIX) {
            self.record(host, NemesisAction::Start, None, Some(detail));
        }
        Ok(())
    }

    pub(super) fn service_address(
        &self,
        host: &str,
        proc: &mut Proc,
    ) -> Result<SocketAddr, LiveError> {
        if host == etcd::HOST {
            let addr =
                self.addresses.get("etcd-client").copied().ok_or_else(|| {
                    LiveError::Harness("etcd's client port was not picked".into())
                })?;
            wait_for_port(addr, proc, START_BOUND).map_err(LiveError::Harness)?;
            return Ok(addr);
        }
        let text = wait_for_address(proc, START_BOUND).map_err(LiveError::Harness)?;
        text.parse()
            .map_err(|_| LiveError::Harness(format!("{host} printed `{text}`, not HOST:PORT")))
    }

    /// The command line of `host`'s boot `boot`.
    pub(super) fn command(
        &mut self,
        host: &str,
        boot: u64,
        history: &Path,
    ) -> Result<Command, LiveError> {
        let exe = std::env::current_exe().map_err(harness("this executable"))?;
        let mut command = Command::new(&exe);
        if host == hosts::LEASE || host == hosts::LEDGER {
            let data = self.out.join("data").join(host);
            command
                .arg("serve")
                .arg(host)
                .arg("--listen")
                .arg("127.0.0.1:0")
                .arg("--data")
                .arg(&data)
                .arg("--run")
                .arg(&self.run_file)
                .arg("--history")
                .arg(history)
                .arg("--boot")
                .arg(boot.to_string());
        } else if host == etcd::HOST {
            let client = free_port().map_err(harness("a free port for etcd"))?;
            let peer = free_port().map_err(harness("a free port for etcd"))?;
            self.addresses.insert(
                "etcd-client".into(),
                SocketAddr::from(([127, 0, 0, 1], client)),
            );
            command = etcd::etcd_command(&self.out.join("data/etcd"), client, peer);
        } else {
            let lease = match self.backend {
                Backend::Grpc => LeaseTarget::Grpc(
                    self.links[&(host.to_owned(), hosts::LEASE.to_owned())]
                        .listen()
                        .to_string(),
                ),
                Backend::Etcd => LeaseTarget::Etcd(
                    self.links[&(host.to_owned(), etcd::HOST.to_owned())]
                        .listen()
                        .to_string(),
                ),
                Backend::Flock => LeaseTarget::Flock(self.out.join("leases")),
            };
            if self.backend == Backend::Flock {
                std::fs::create_dir_all(self.out.join("leases")).map_err(harness("leases/"))?;
            }
            let ledger = self.links[&(host.to_owned(), hosts::LEDGER.to_owned())].listen();
            command
                .arg("replica")
                .arg("--run")
                .arg(&self.run_file)
                .arg("--name")
                .arg(host)
                .arg("--incarnation")
                .arg(boot.to_string())
                .arg("--lease")
                .arg(lease.to_string())
                .arg("--ledger")
                .arg(ledger.to_string())
                .arg("--history")
                .arg(history);
            if let Some(mutant) = self.lease_mutant {
                command.arg("--mutant").arg(mutant.name());
            }
        }
        Ok(command)
    }

    /// SIGKILLs `host`'s process; `false` if none was running.
    pub(super) fn kill(&mut self, host: &str, why: &str) -> bool {
        let now = self.now();
        let Some(state) = self.hosts.get_mut(host) else {
            return false;
        };
        state.crashed = true;
        state.paused = false;
        let Some(mut proc) = state.proc.take() else {
            return false;
        };
        proc.kill();
        self.ended.push(process_file(&proc, now, why));
        true
    }

    /// Stops everything: replicas first (SIGTERM: a graceful shutdown), then the run-ended
    /// marker, then the services (the ledger writes its final ledger on SIGTERM). Whatever a
    /// child's exit after its SIGTERM, it is the stop's; one that exited before it is judged
    /// as [`Self::supervise`] judges it (an error then, once everything has stopped).
    pub(super) fn stop_all(&mut self) -> Result<(), LiveError> {
        let mut exited = self.reap_exited();
        let replicas = self.replica_names();
        let mut forced = Vec::new();
        for host in &replicas {
            if let Some(proc) = self.hosts.get_mut(host).and_then(|s| s.proc.as_mut()) {
                proc.signal(libc::SIGCONT);
                proc.signal(libc::SIGTERM);
            }
        }
        for host in &replicas {
            self.stop_one(host, &mut forced);
        }
        // The services ran on alone while the replicas shut down.
        let later = self.reap_exited();
        exited = exited.or(later);
        let phase = self.phase(Phase::RunEnded);
        for host in self.services() {
            self.stop_one(&host, &mut forced);
        }
        if !forced.is_empty() {
            println!(
                "live: SIGKILLed after {} s without stopping: {}",
                self.stop_bound.as_secs(),
                forced.join(", ")
            );
        }
        let _ = self.nemesis.close();
        exited.map_or(phase, |failed| Err(LiveError::Harness(failed)))
    }

    pub(super) fn stop_one(&mut self, host: &str, forced: &mut Vec<String>) {
        let Some(state) = self.hosts.get_mut(host) else {
            return;
        };
        if let Some(mut proc) = state.proc.take() {
            if !proc.stop(self.stop_bound) {
                forced.push(host.to_owned());
            }
            let now = self.truth.now();
            self.ended.push(process_file(&proc, now, "run ended"));
        }
    }
}

/// Why `host`'s exit by itself with `status` makes the run a harness error, or `None` for
/// the one exit a run expects: a replica's exit 0 (its generated workload's graceful end).
/// The nemesis's kills and the stop's signals never come here: they reap what they signal.
fn unexpected_exit(host: &str, boot: u64, log: &Path, status: ExitStatus) -> Option<String> {
    if host.starts_with(hosts::REPLICA_PREFIX) && status.success() {
        return None;
    }
    let log = log.display();
    // Exit 2 is a refusal of its arguments: every later boot would refuse too.
    Some(
        if status.code() == Some(crate::exit::Exit::BadInput.code().into()) {
            format!("{host} (boot {boot}) refused to start (exit 2): see {log}")
        } else {
            format!(
                "{host} (boot {boot}) exited by itself ({status}), which no nemesis action \
                 did: the run cannot go on without it; see {log}"
            )
        },
    )
}

fn process_file(proc: &Proc, now: Duration, end: &str) -> ProcessFile {
    ProcessFile {
        host: proc.host.clone(),
        boot: proc.boot,
        path: proc.history.clone(),
        end_us: micros(now),
        end: end.to_owned(),
    }
}

fn free_port() -> std::io::Result<u16> {
    Ok(std::net::TcpListener::bind("127.0.0.1:0")?
        .local_addr()?
        .port())
}

// Live mode is real by design: a bounded wait for a real server's port.
#[allow(clippy::disallowed_types)]
fn wait_for_port(addr: SocketAddr, proc: &mut Proc, bound: Duration) -> Result<(), String> {
    let deadline = std::time::Instant::now() + bound;
    loop {
        if std::net::TcpStream::connect_timeout(&addr, Duration::from_millis(200)).is_ok() {
            return Ok(());
        }
        if proc.exited().is_some() || std::time::Instant::now() >= deadline {
            return Err(format!(
                "{} did not accept on {addr} within {bound:?}; {}",
                proc.host,
                proc.log.display()
            ));
        }
        #[allow(clippy::disallowed_methods)]
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[cfg(test)]
mod tests {
    use std::os::unix::process::ExitStatusExt;

    use super::*;

    #[test]
    fn the_stop_bound_is_two_ttls_and_six_seconds_past_a_replicas_own_shutdown_bound() {
        assert_eq!(stop_bound(Duration::from_secs(2)), Duration::from_secs(10));
        assert_eq!(
            stop_bound(Duration::from_millis(500)),
            Duration::from_secs(7)
        );
        for ttl in [Duration::from_millis(100), Duration::from_secs(30)] {
            assert!(stop_bound(ttl) > ttl * 2 + crate::live::replica::SHUTDOWN_SLACK);
        }
    }

    #[test]
    fn only_a_replicas_exit_0_is_an_exit_by_itself_the_run_expects() {
        let log = Path::new("logs/x.log");
        let exit = |code: i32| ExitStatus::from_raw(code << 8);
        let killed = ExitStatus::from_raw(libc::SIGKILL);
        assert_eq!(unexpected_exit("replica-2", 1, log, exit(0)), None);
        for (host, status, says) in [
            ("ledger", exit(0), "exit status: 0"),
            ("ledger", killed, "signal: 9"),
            ("lease", exit(1), "exit status: 1"),
            ("etcd", killed, "signal: 9"),
            ("replica-1", exit(3), "exit status: 3"),
            ("replica-1", killed, "signal: 9"),
            ("replica-3", exit(2), "refused to start (exit 2)"),
        ] {
            let error = unexpected_exit(host, 0, log, status).expect("a harness error");
            assert!(
                error.starts_with(&format!("{host} (boot 0) ")) && error.contains(says),
                "{error}"
            );
        }
    }
}
