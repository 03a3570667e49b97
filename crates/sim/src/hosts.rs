//! The per-host state that outlives crashes — clocks, freezes, disks, boot counters,
//! connections and the running authority's fault handle — shared by the world (which starts the hosts) and the
//! nemesis (which freezes, crashes and restarts them).

use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use super::backend::{AuthorityFaults, FaultsSlot, ForkSlot};
use super::clock::HostClock;
use super::config::{WALL_EPOCH, WorldConfig, WorldEngine};
use super::errors::ErrorWindows;
use super::freeze::HostFreeze;
use super::net::HostConns;
use super::record::Recorder;
use super::reply_hold::{ReplyHolds, holding_dialer};
use super::schedule::{Fault, FaultSchedule};
use leasesim_core::storage::MemStorage;
use leasesim_net::Dialer;

/// Every host of one world.
pub(crate) struct Hosts {
    pub(crate) clocks: BTreeMap<String, HostClock>,
    pub(crate) freezes: BTreeMap<String, HostFreeze>,
    boots: BTreeMap<String, Arc<AtomicU64>>,
    /// Each host's simulated connections, closed in the order they were opened when the
    /// nemesis crashes or restarts the host.
    pub(crate) conns: BTreeMap<String, HostConns>,
    /// The backend's host (`lease` for the default backend).
    pub(crate) authority_host: String,
    pub(crate) authority_disk: MemStorage,
    pub(crate) ledger_disk: MemStorage,
    /// The running authority's faults (record deletion), while it runs.
    pub(crate) authority_faults: FaultsSlot,
    /// The authority's error windows (`authority_errors`): kept across its restarts.
    pub(crate) error_windows: ErrorWindows,
    /// The links whose replies are held (`hold_replies`); `None` when the schedule holds
    /// none, so replicas dial plain connections.
    pub(crate) reply_holds: Option<ReplyHolds>,
    /// Hosts the nemesis crashed and has not restarted yet.
    crashed: Mutex<BTreeSet<String>>,
    /// The run's recorder, for what the nemesis does to a host (`event` lines).
    pub(crate) recorder: Recorder,
    /// The world's link latency, `(least, most)` ms: what a heal sets every link back to.
    pub(crate) link_latency_ms: (u64, u64),
    /// The backend host as the flock model sees it, on that host's clock.
    pub(crate) flock: leasesim_flock::model::Host,
    /// Each replica's fork slot (kept across its boots, as its lingering children are).
    forks: BTreeMap<String, ForkSlot>,
    /// Whether the hosts leave a suspend at a pause point to the nemesis
    /// ([`HostFreeze::defer_suspends`]: the world on the engine); on turmoil none ever does,
    /// so the nemesis need not look at the freezes at every step.
    pub(crate) defers_suspends: bool,
}

impl Hosts {
    /// Fresh clocks (at [`WALL_EPOCH`]), freezes, disks and boot counters for every host of
    /// `config`, recording into `recorder`, ready for the faults of `schedule`.
    pub(crate) fn new(config: &WorldConfig, recorder: &Recorder, schedule: &FaultSchedule) -> Self {
        let holds_replies = schedule
            .faults
            .iter()
            .any(|f| matches!(f.fault, Fault::HoldReplies { .. }));
        let mut clocks = BTreeMap::new();
        let mut freezes = BTreeMap::new();
        let mut boots = BTreeMap::new();
        let mut conns = BTreeMap::new();
        let defers_suspends = config.engine == WorldEngine::Engine;
        for host in config.hosts() {
            let clock = HostClock::new(WALL_EPOCH);
            let freeze = HostFreeze::new(&clock);
            if defers_suspends {
                freeze.defer_suspends();
            }
            freezes.insert(host.clone(), freeze);
            clocks.insert(host.clone(), clock);
            let host_conns = match config.engine {
                WorldEngine::Turmoil => HostConns::default(),
                WorldEngine::Engine => HostConns::on_engine(),
            };
            conns.insert(host.clone(), host_conns);
            boots.insert(host, Arc::new(AtomicU64::new(0)));
        }
        let authority_host = config.backend.view().host;
        let flock = super::backend::flock_model_host(Arc::new(clocks[&authority_host].clone()));
        let forks = clocks
            .keys()
            .map(|host| (host.clone(), ForkSlot::default()))
            .collect();
        Hosts {
            clocks,
            freezes,
            boots,
            conns,
            authority_host,
            authority_disk: MemStorage::new(),
            ledger_disk: MemStorage::new(),
            authority_faults: Arc::new(Mutex::new(None)),
            error_windows: ErrorWindows::default(),
            reply_holds: holds_replies.then(ReplyHolds::default),
            crashed: Mutex::new(BTreeSet::new()),
            recorder: recorder.clone(),
            link_latency_ms: config.latency_ms,
            flock,
            forks,
            defers_suspends,
        }
    }

    pub(crate) fn clock(&self, host: &str) -> HostClock {
        self.clocks[host].clone()
    }

    /// The fork slot of replica `host`.
    pub(crate) fn forks(&self, host: &str) -> ForkSlot {
        self.forks[host].clone()
    }

    pub(crate) fn freeze(&self, host: &str) -> HostFreeze {
        self.freezes[host].clone()
    }

    pub(crate) fn conns(&self, host: &str) -> HostConns {
        self.conns[host].clone()
    }

    /// How replica `host` dials the services: turmoil TCP, its replies held as the
    /// schedule's `hold_replies` say.
    pub(crate) fn replica_dialer(&self, host: &str) -> Dialer {
        let dialer = self.conns[host].dialer();
        match &self.reply_holds {
            Some(holds) => holding_dialer(dialer, host, holds.clone()),
            None => dialer,
        }
    }

    /// The host's boot counter: each boot takes the next incarnation number.
    pub(crate) fn boots(&self, host: &str) -> Arc<AtomicU64> {
        self.boots[host].clone()
    }

    /// The running authority's fault handle, if it runs and exposed one.
    pub(crate) fn authority_faults(&self) -> Option<Arc<dyn AuthorityFaults>> {
        self.authority_faults
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// A crash of `host` loses its disk's unsynced writes (and the authority's handle).
    pub(crate) fn crash_disk(&self, host: &str) {
        if host == self.authority_host {
            self.authority_disk.crash();
            *self
                .authority_faults
                .lock()
                .unwrap_or_else(|p| p.into_inner()) = None;
        } else if host == leasesim_history::hosts::LEDGER {
            self.ledger_disk.crash();
        }
    }

    pub(crate) fn is_crashed(&self, host: &str) -> bool {
        self.crashed
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .contains(host)
    }

    pub(crate) fn set_crashed(&self, host: &str, crashed: bool) {
        let mut set = self.crashed.lock().unwrap_or_else(|p| p.into_inner());
        if crashed {
            set.insert(host.to_owned());
        } else {
            set.remove(host);
        }
    }
}

/// Reads a boot counter and advances it.
pub(crate) fn next_boot(boots: &AtomicU64) -> u64 {
    boots.fetch_add(1, Ordering::SeqCst)
}
