//! The shape of a world ([`WorldConfig`]) and what its replicas do ([`Workload`]): plain data,
//! shared by the world that runs it, the nemesis, the workload and the fault generators, so
//! none of them imports the world itself.

use std::time::Duration;

use super::backend::Backend;
use super::plan::Plan;
pub use super::plan::WorkloadMix;
use super::schedule::ScheduleBounds;
use super::script::Script;
use leasesim_core::clock::WallTime;
use leasesim_core::journal::SkewMargin;
use leasesim_core::mutant::Mutant;
use leasesim_history::{ConfigLine, hosts, limits, micros};
use leasesim_remote::ClientConfig;

/// Port of the ledger service on its host.
pub const LEDGER_PORT: u16 = 7071;

/// The wall clock every host starts at: 2026-01-01T00:00:00Z (fixed, never the real time).
pub const WALL_EPOCH: WallTime = WallTime {
    unix_ns: 1_767_225_600_000_000_000,
};

/// The shape of a world.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct WorldConfig {
    /// Master seed: every random choice derives from it.
    pub seed: u64,
    /// Number of replica hosts (default 3).
    pub replicas: u32,
    /// The contended sessions (default [`default_sessions`] of the replicas: `s1`, `s2` up to
    /// 29 replicas).
    pub sessions: Vec<String>,
    /// Lease TTL (default 10 s): what the authority grants.
    pub ttl: Duration,
    /// The TTL the replicas' own configuration names, when it differs from what the
    /// authority grants (default none). The correct client ignores it (validity counts the
    /// granted TTL); [`Mutant::ClientUsesConfiguredTtl`] misuses it.
    pub replica_ttl: Option<Duration>,
    /// Skew margin, percent of the TTL (default 10).
    pub skew_margin_percent: u8,
    /// Simulated duration of the run (default 60 s).
    pub duration: Duration,
    /// Deadline of every client call (default 2 s).
    pub call_timeout: Duration,
    /// Network latency range, ms (default 1..=5).
    pub latency_ms: (u64, u64),
    /// A planted bug, if any: carried by this world only and handed to every component —
    /// the lease authority, the ledger service, and each replica's store (its holds,
    /// journals, renewer and service); each honours the mutants that concern it.
    pub mutant: Option<Mutant>,
    /// What a generated workload's replicas do (ignored by a scripted workload).
    pub mix: WorkloadMix,
    /// The lease backend: the authority host's server and the replicas' client (default:
    /// the gRPC [`super::backend::Grpc`] services).
    pub backend: Backend,
    /// The liveness phase: run on after the heal until LIVE's bound has run out
    /// ([`leasesim_history::ConfigLine::live_bound_us`]), even past `duration`, so LIVE is
    /// always judged (default off: a plain `leasesim run` ends at `duration`).
    pub liveness_phase: bool,
    /// What runs the world's hosts and time (default [`WorldEngine::Turmoil`];
    /// docs/world.md#the-world-on-the-engine).
    pub engine: WorldEngine,
}

/// What runs a world: turmoil 0.7.2 (today's world, stepping every host every millisecond),
/// or leasesim's own engine (`crates/engine`: each host on its own paused runtime whose tokio
/// clock is the host's clock, TCP over turmoil-net; docs/engine.md). Both run beside each
/// other until the engine passes everything turmoil does (issue 44); the default stays turmoil.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum WorldEngine {
    /// turmoil 0.7.2: the world as it has always run.
    #[default]
    Turmoil,
    /// leasesim's engine (docs/world.md#the-world-on-the-engine says what runs there, what is
    /// refused and what differs).
    Engine,
}

impl WorldEngine {
    /// The name `--engine` takes: `turmoil` or `engine`.
    pub fn name(self) -> &'static str {
        match self {
            WorldEngine::Turmoil => "turmoil",
            WorldEngine::Engine => "engine",
        }
    }

    /// The engine named `name` (`turmoil` or `engine`), if there is one.
    pub fn from_name(name: &str) -> Option<WorldEngine> {
        [WorldEngine::Turmoil, WorldEngine::Engine]
            .into_iter()
            .find(|engine| engine.name() == name)
    }
}

impl Default for WorldConfig {
    fn default() -> Self {
        WorldConfig {
            seed: 0,
            replicas: 3,
            sessions: default_sessions(3),
            ttl: Duration::from_secs(10),
            replica_ttl: None,
            skew_margin_percent: 10,
            duration: Duration::from_secs(60),
            call_timeout: Duration::from_secs(2),
            latency_ms: (1, 5),
            mutant: None,
            mix: WorkloadMix::default(),
            backend: Backend::default(),
            liveness_phase: false,
            engine: WorldEngine::Turmoil,
        }
    }
}

impl WorldConfig {
    /// The host names: the backend's authority host (`lease` for the default backend),
    /// `ledger`, `replica-1` … `replica-N`.
    pub fn hosts(&self) -> Vec<String> {
        let mut hosts = vec![self.backend.view().host, hosts::LEDGER.to_owned()];
        hosts.extend((1..=self.replicas).map(replica_name));
        hosts
    }

    /// What a fault schedule is checked against in this world: its hosts and sessions, its
    /// duration and TTL, and LIVE's bound after the heal when it has a liveness phase.
    pub fn schedule_bounds(&self) -> ScheduleBounds {
        ScheduleBounds {
            hosts: self.hosts(),
            sessions: self.sessions.clone(),
            duration_ms: self.duration.as_millis() as u64,
            ttl_ms: self.ttl.as_millis() as u64,
            live_bound_us: self
                .liveness_phase
                .then(|| config_line(self).live_bound_us(true)),
        }
    }

    /// The gRPC clients' settings for this world: its call timeout, the rest default.
    pub fn client_config(&self) -> ClientConfig {
        ClientConfig {
            call_timeout: self.call_timeout,
            ..ClientConfig::default()
        }
    }
}

/// The sessions of a world of `replicas` replicas that does not name its own: `s1` … `sK`
/// with `K = max(2, replicas / 10)` ([`limits::REPLICAS_PER_SESSION`]): `s1`, `s2` for every
/// world of up to 29 replicas (the sessions every world had before worlds grew past 64), then
/// one more per ten replicas, so a large world's sessions each see about ten contenders and its
/// histories stay small enough to judge (docs/world.md#worlds-of-any-size). A run file records
/// the sessions it ran with, so a replay never depends on this rule.
pub fn default_sessions(replicas: u32) -> Vec<String> {
    let count = (replicas / limits::REPLICAS_PER_SESSION).max(2);
    (1..=count).map(|n| format!("s{n}")).collect()
}

/// The name of replica `n` (from 1).
pub fn replica_name(n: u32) -> String {
    hosts::replica(n)
}

/// What the replicas do.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub enum Workload {
    /// Drawn from the seed: replicas contend for the sessions through the service layer.
    #[default]
    Generated,
    /// Exactly these calls.
    Scripted(Script),
    /// Exactly these runs, through the service layer ([`super::plan`]).
    Planned(Plan),
}

/// The history's `config` line for `config`.
pub fn config_line(config: &WorldConfig) -> ConfigLine {
    let client = config.client_config();
    ConfigLine {
        ttl_us: micros(config.ttl),
        skew_margin_us: micros(SkewMargin::Percent(config.skew_margin_percent).of(config.ttl)),
        renew_interval_us: micros(config.ttl / 3),
        longest_reconnect_backoff_us: micros(client.reconnect_backoff_max),
        grace_period_us: micros(config.ttl),
        mutant: config.mutant.map(|m| m.name().to_owned()),
        seed: config.seed,
        replicas: config.replicas,
        sessions: config.sessions.clone(),
        authority: config.backend.view().decisions_host().map(str::to_owned),
    }
}
