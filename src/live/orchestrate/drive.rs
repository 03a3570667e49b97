//! The run in true time: services, proxy links and replicas started, the nemesis plan applied
//! step by step, the heal and the liveness phase.

use std::time::Duration;

use super::{LiveError, Run, fnv1a, harness, live_bound};
use crate::history::{NemesisAction, Phase, hosts};
use crate::live::nemesis::{Action, LinkChange, Plan};
use crate::live::proxy::{Link, LinkFaults};
use crate::sim::runfile::RunFile;

/// How often the orchestrator looks at its children between nemesis steps.
const TICK: Duration = Duration::from_millis(20);

impl Run<'_> {
    /// The whole run up to the stop: services, links, replicas, the nemesis, the heal and
    /// the liveness phase.
    pub(super) fn drive(
        &mut self,
        run: &RunFile,
        plan: &Plan,
        timeout: Duration,
    ) -> Result<(), LiveError> {
        for service in self.services() {
            self.start(&service)?;
        }
        for replica in self.replica_names() {
            for service in self.services() {
                let upstream = self.addresses[&service];
                let seed = self.seed ^ fnv1a(&format!("{replica}>{service}"));
                let link = self
                    .runtime
                    .block_on(Link::start(&replica, &service, upstream, seed))
                    .map_err(harness("a proxy link"))?;
                self.links.insert((replica.clone(), service), link);
            }
        }
        for replica in self.replica_names() {
            self.start(&replica)?;
        }
        let deadline = timeout;
        for step in &plan.steps {
            self.wait_until(Duration::from_millis(step.at_ms), deadline)?;
            self.apply(&step.action, &step.why)?;
        }
        self.wait_until(Duration::from_millis(plan.heal_at_ms), deadline)?;
        self.heal()?;
        self.phase(Phase::FaultsHealed)?;
        let healed = self.now();
        let restarted = self.hosts.get(hosts::LEASE).is_some_and(|h| h.boots > 1);
        let bound = Duration::from_micros(live_bound(run, restarted));
        let end = (healed + bound + Duration::from_millis(200))
            .max(run.world_config_unchecked().duration);
        println!(
            "  {:>8.3} s liveness phase until {:.3} s (LIVE's bound {} ms after the heal)",
            healed.as_secs_f64(),
            end.as_secs_f64(),
            bound.as_millis()
        );
        self.wait_until(end, deadline)?;
        Ok(())
    }

    /// Waits until true time `at`, restarting replicas that stopped by themselves.
    pub(super) fn wait_until(&mut self, at: Duration, deadline: Duration) -> Result<(), LiveError> {
        loop {
            let now = self.now();
            if now >= deadline {
                return Err(LiveError::Harness(format!(
                    "the run did not end within --timeout {deadline:?}"
                )));
            }
            self.supervise()?;
            if now >= at {
                return Ok(());
            }
            #[allow(clippy::disallowed_methods)]
            std::thread::sleep(TICK.min(at - now));
        }
    }

    /// The links a fault between `a` and `b` touches.
    pub(super) fn links_between(&self, a: &str, b: &str) -> Vec<&Link> {
        self.links
            .iter()
            .filter(|((client, service), _)| {
                (client == a && service == b) || (client == b && service == a)
            })
            .map(|(_, link)| link)
            .collect()
    }

    pub(super) fn apply(&mut self, action: &Action, reason: &str) -> Result<(), LiveError> {
        let why = Some(reason.to_owned());
        match action {
            Action::Stop(host) => self.set_paused(host, true, why),
            Action::Cont(host) => self.set_paused(host, false, why),
            Action::Kill(host) => {
                if self.kill(host, "crash") {
                    self.record(host, NemesisAction::Sigkill, None, why);
                }
            }
            Action::Start(host) => self.start(host)?,
            Action::Link { a, b, change } => {
                let links = self.links_between(a, b);
                for link in &links {
                    let client = link.client.clone();
                    link.update(|f| change_link(f, change, &client));
                }
                let name = match change {
                    LinkChange::Cut => NemesisAction::Partition,
                    LinkChange::DropFrom(_) => NemesisAction::PartitionOneWay,
                    LinkChange::Hold | LinkChange::HoldFrom(_) => NemesisAction::Hold,
                    LinkChange::Release | LinkChange::ReleaseFrom(_) => NemesisAction::Release,
                    LinkChange::Latency(..) => NemesisAction::Latency,
                    LinkChange::Flaps(_) => NemesisAction::LinkFlaps,
                };
                let detail = if links.is_empty() {
                    format!("{reason} — no proxied link between them")
                } else {
                    reason.to_owned()
                };
                self.record(a, name, Some(b), Some(detail));
            }
            Action::Isolate(host) => {
                for ((client, service), link) in &self.links {
                    if client == host || service == host {
                        link.update(|f| f.cut = true);
                    }
                }
                self.record(host, NemesisAction::Partition, Some("all"), why);
            }
            Action::WallOffset { host, offset_ms } => {
                let spec = self.out.join(format!("data/{host}.faketime"));
                let sign = if *offset_ms < 0 { "-" } else { "+" };
                let text = format!("{sign}{:.3}\n", offset_ms.unsigned_abs() as f64 / 1e3);
                std::fs::write(&spec, text).map_err(harness("the faketime file"))?;
                self.record(
                    host,
                    NemesisAction::Clock,
                    None,
                    Some(format!("wall offset {offset_ms} ms")),
                );
            }
            Action::HealAll => self.heal()?,
        }
        Ok(())
    }

    /// Stops (`SIGSTOP`) or continues (`SIGCONT`) `host`'s process, if it runs, and records
    /// the signal either way.
    fn set_paused(&mut self, host: &str, paused: bool, why: Option<String>) {
        let (signal, action) = if paused {
            (libc::SIGSTOP, NemesisAction::Sigstop)
        } else {
            (libc::SIGCONT, NemesisAction::Sigcont)
        };
        if let Some(state) = self.hosts.get_mut(host)
            && let Some(proc) = &state.proc
        {
            proc.signal(signal);
            state.paused = paused;
        }
        self.record(host, action, None, why);
    }

    /// Every link healed, every paused process continued, every crashed one started again.
    pub(super) fn heal(&mut self) -> Result<(), LiveError> {
        for link in self.links.values() {
            link.heal();
        }
        let mut crashed = Vec::new();
        for (host, state) in &mut self.hosts {
            if state.paused
                && let Some(proc) = &state.proc
            {
                proc.signal(libc::SIGCONT);
                state.paused = false;
            }
            if state.crashed {
                crashed.push(host.clone());
            }
        }
        self.record("all", NemesisAction::Heal, None, None);
        // Services first: a replica's links follow their new ports.
        crashed.sort_by_key(|h| h.starts_with(hosts::REPLICA_PREFIX));
        for host in crashed {
            self.start(&host)?;
        }
        Ok(())
    }
}

fn change_link(faults: &mut LinkFaults, change: &LinkChange, client: &str) {
    match change {
        LinkChange::Cut => faults.cut = true,
        LinkChange::DropFrom(from) if from == client => faults.drop_up = true,
        LinkChange::DropFrom(_) => faults.drop_down = true,
        LinkChange::Hold => {
            faults.hold_up = true;
            faults.hold_down = true;
        }
        LinkChange::Release => {
            faults.hold_up = false;
            faults.hold_down = false;
        }
        LinkChange::HoldFrom(from) if from == client => faults.hold_up = true,
        LinkChange::HoldFrom(_) => faults.hold_down = true,
        LinkChange::ReleaseFrom(from) if from == client => faults.hold_up = false,
        LinkChange::ReleaseFrom(_) => faults.hold_down = false,
        LinkChange::Latency(latency, jitter) => {
            faults.latency = Duration::from_millis(*latency);
            faults.jitter = Duration::from_millis(*jitter);
        }
        LinkChange::Flaps(ppm) => faults.flap_ppm = *ppm,
    }
}
