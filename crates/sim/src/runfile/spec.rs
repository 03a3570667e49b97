//! The `world` of a run file and of a scenario's `[world]` section: every setting of a
//! world as plain numbers (ms, s, percent), checked field by field.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::backend::{
    Backend, Flock, Grpc, Kube, TARGET_PREFIX, TARGETS_BINARY, check_whole_seconds, target_backend,
};
use crate::config::{WorkloadMix, WorldConfig, WorldEngine, default_sessions};
use leasesim_core::lease::SessionId;
use leasesim_history::limits::{CALL_TIMEOUT_MS_MAX, DURATION_S_MAX, REPLICAS_MAX, TTL_MS_MAX};

/// The lease backend a run file or scenario names: the backends built into leasesim, or a
/// target backend (`target:<name>`) that only a targets binary knows
/// ([`crate::backend::target_backend`]; docs/targets.md#the-targets-binary). A user's
/// own backend plugs into [`crate::world::World::builder`] from Rust instead.
#[derive(Clone, PartialEq, Eq, Debug, Default, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub enum BackendSpec {
    /// The remote lease and ledger services over gRPC on turmoil's TCP
    /// ([`crate::backend::Grpc`]).
    #[default]
    Grpc,
    /// Kubernetes Lease objects on a simulated API server (host `apiserver`), reached by
    /// `KubeLease` ([`crate::backend::Kube`]); the TTL must be whole seconds.
    Kube,
    /// `FlockLease` on the flock model of host `lease`, every replica a process of it
    /// ([`crate::backend::Flock`], docs/world.md#flock-in-the-world).
    Flock,
    /// A target backend, by its whole spelling (`target:kube-lease-manager`).
    Target(String),
}

impl BackendSpec {
    /// The backend itself.
    ///
    /// # Panics
    /// For a target backend this process does not know: [`WorldSpec::check`] refuses it
    /// first, naming the targets binary.
    pub fn backend(&self) -> Backend {
        match self {
            BackendSpec::Grpc => Backend::new(Grpc),
            BackendSpec::Kube => Backend::new(Kube),
            BackendSpec::Flock => Backend::new(Flock),
            BackendSpec::Target(spelling) => target_backend(spelling)
                .unwrap_or_else(|message| panic!("{message} (check the world first)")),
        }
    }

    /// Its name in files (`grpc`, `target:kube-lease-manager`).
    pub fn name(&self) -> &str {
        match self {
            BackendSpec::Grpc => "grpc",
            BackendSpec::Kube => "kube",
            BackendSpec::Flock => "flock",
            BackendSpec::Target(spelling) => spelling,
        }
    }

    /// The binary that runs a world on this backend: `leasesim`, or for a target backend
    /// the targets binary ([`TARGETS_BINARY`]), the only one that knows it
    /// (docs/targets.md#the-targets-binary). Replay lines name it.
    pub fn binary(&self) -> &'static str {
        match self {
            BackendSpec::Grpc | BackendSpec::Kube | BackendSpec::Flock => "leasesim",
            BackendSpec::Target(_) => TARGETS_BINARY,
        }
    }

    /// Every built-in backend, in the order campaigns run them.
    pub const ALL: [BackendSpec; 2] = [BackendSpec::Grpc, BackendSpec::Kube];
}

impl TryFrom<String> for BackendSpec {
    type Error = String;

    fn try_from(name: String) -> Result<Self, String> {
        match name.as_str() {
            "grpc" => Ok(BackendSpec::Grpc),
            "kube" => Ok(BackendSpec::Kube),
            "flock" => Ok(BackendSpec::Flock),
            target if target.len() > TARGET_PREFIX.len() && target.starts_with(TARGET_PREFIX) => {
                Ok(BackendSpec::Target(name))
            }
            other => Err(format!(
                "unknown backend `{other}`, expected `grpc`, `kube`, `flock` or `{TARGET_PREFIX}<name>`"
            )),
        }
    }
}

impl From<BackendSpec> for String {
    fn from(spec: BackendSpec) -> String {
        spec.name().to_owned()
    }
}

/// The `[world]` section: the shape of the simulated world. Every field is optional in a
/// scenario (the defaults are [`WorldConfig::default`]'s, the sessions
/// [`default_sessions`]' for the replicas given); a run file holds all of them.
#[derive(Clone, PartialEq, Eq, Debug, Serialize, Deserialize)]
#[serde(from = "WorldSection")]
pub struct WorldSpec {
    /// Replica hosts, 1..=[`REPLICAS_MAX`] (default 3).
    pub replicas: u32,
    /// The contended sessions, each named once (default [`default_sessions`] of `replicas`:
    /// `["s1", "s2"]` up to 29 replicas, then one more per ten replicas).
    pub sessions: Vec<String>,
    /// Lease TTL, ms (default 10000). Renewals come every third of it.
    pub ttl_ms: u64,
    /// Skew margin, percent of the TTL, 0..=99 (default 10).
    pub skew_margin_percent: u8,
    /// Simulated duration of a run, s, 1..=86400 (default 60).
    pub duration_s: u64,
    /// Deadline of every client call, ms (default 2000).
    pub call_timeout_ms: u64,
    /// Network latency range, ms, `[least, most]` (default `[1, 5]`).
    pub latency_ms: (u64, u64),
    /// The backend: `"grpc"` (default), `"kube"` (whose `ttl_ms` must be whole seconds), or
    /// `"target:<name>"`, known only to a targets binary.
    pub backend: BackendSpec,
    /// The TTL the replicas' own configuration names, ms, 1..=86400000, when it differs from
    /// the `ttl_ms` the authority grants (default: none, the same). The correct client ignores
    /// it and counts the granted TTL; `client-uses-configured-ttl` misuses it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub replica_ttl_ms: Option<u64>,
    /// What runs the world: `"turmoil"` (default, and what a file without the field means:
    /// it is written only when it is not turmoil, so every older file reads and replays
    /// unchanged) or `"engine"` (docs/world.md#the-world-on-the-engine).
    #[serde(skip_serializing_if = "is_turmoil", serialize_with = "engine_name")]
    pub engine: WorldEngine,
}

/// Whether `engine` is the default one, left out of the files written.
fn is_turmoil(engine: &WorldEngine) -> bool {
    *engine == WorldEngine::Turmoil
}

/// Writes `engine` by its name ([`WorldEngine::name`]).
fn engine_name<S: serde::Serializer>(engine: &WorldEngine, out: S) -> Result<S::Ok, S::Error> {
    out.serialize_str(engine.name())
}

/// Reads an engine by its name; any other value is refused, naming both names.
fn engine_by_name<'de, D: serde::Deserializer<'de>>(input: D) -> Result<WorldEngine, D::Error> {
    let name = String::deserialize(input)?;
    WorldEngine::from_name(&name).ok_or_else(|| {
        serde::de::Error::custom(format!(
            "unknown engine `{name}`, expected `turmoil` or `engine`"
        ))
    })
}

impl Default for WorldSpec {
    fn default() -> Self {
        let config = WorldConfig::default();
        WorldSpec {
            replicas: config.replicas,
            sessions: config.sessions,
            ttl_ms: config.ttl.as_millis() as u64,
            skew_margin_percent: config.skew_margin_percent,
            duration_s: config.duration.as_secs(),
            call_timeout_ms: config.call_timeout.as_millis() as u64,
            latency_ms: config.latency_ms,
            backend: BackendSpec::Grpc,
            replica_ttl_ms: None,
            engine: config.engine,
        }
    }
}

/// Declares a world as written: [`WorldSpec`]'s fields with its sessions optional, so a world
/// that does not name them gets [`default_sessions`] of its own replicas (a run file always
/// names them: the rule may change, a replay may not), then the fields given. The one list of
/// the world's fields for the two places that read them, which accept different fields: a run
/// file's `world` names the engine, a scenario's `[world]` does not. Two types, because
/// `deny_unknown_fields` refuses what its own type does not list (with an error naming what it
/// does, at the unknown key) and `serde(flatten)` would lose it. Each type gets its `Default`
/// (the fields of [`WorldSpec::default`], sessions left to the rule) and `into_spec`.
macro_rules! world_section {
    ($(#[$doc:meta])* $name:ident { $($(#[$serde:meta])* $field:ident: $ty:ty,)* }) => {
        $(#[$doc])*
        #[derive(Deserialize)]
        #[serde(default, deny_unknown_fields)]
        struct $name {
            replicas: u32,
            sessions: Option<Vec<String>>,
            ttl_ms: u64,
            skew_margin_percent: u8,
            duration_s: u64,
            call_timeout_ms: u64,
            #[serde(deserialize_with = "super::pair::exact")]
            latency_ms: (u64, u64),
            backend: BackendSpec,
            replica_ttl_ms: Option<u64>,
            $($(#[$serde])* $field: $ty,)*
        }

        impl Default for $name {
            fn default() -> Self {
                let spec = WorldSpec::default();
                $name {
                    replicas: spec.replicas,
                    sessions: None,
                    ttl_ms: spec.ttl_ms,
                    skew_margin_percent: spec.skew_margin_percent,
                    duration_s: spec.duration_s,
                    call_timeout_ms: spec.call_timeout_ms,
                    latency_ms: spec.latency_ms,
                    backend: spec.backend,
                    replica_ttl_ms: spec.replica_ttl_ms,
                    $($field: spec.$field,)*
                }
            }
        }

        impl $name {
            /// The world written, on `engine`.
            fn into_spec(self, engine: WorldEngine) -> WorldSpec {
                WorldSpec {
                    sessions: self
                        .sessions
                        .unwrap_or_else(|| default_sessions(self.replicas)),
                    replicas: self.replicas,
                    ttl_ms: self.ttl_ms,
                    skew_margin_percent: self.skew_margin_percent,
                    duration_s: self.duration_s,
                    call_timeout_ms: self.call_timeout_ms,
                    latency_ms: self.latency_ms,
                    backend: self.backend,
                    replica_ttl_ms: self.replica_ttl_ms,
                    engine,
                }
            }
        }
    };
}

world_section! {
    /// A run file's `world` as written (or a `[world]` read as a run file's): every field of
    /// [`WorldSpec`], the engine by its name.
    WorldSection {
        #[serde(deserialize_with = "engine_by_name")]
        engine: WorldEngine,
    }
}

impl From<WorldSection> for WorldSpec {
    fn from(section: WorldSection) -> Self {
        let engine = section.engine;
        section.into_spec(engine)
    }
}

/// A scenario's `[world]` section: [`WorldSpec`] without `engine`, which a scenario does not
/// choose (`run --engine` and `campaign --engine` do, and the run file records it:
/// docs/world.md#the-world-on-the-engine). Its world is on turmoil.
#[derive(Clone, PartialEq, Eq, Debug, Deserialize)]
#[serde(from = "ScenarioSection")]
pub struct ScenarioWorld(pub WorldSpec);

world_section! {
    /// [`ScenarioWorld`] as written: [`WorldSection`] without `engine`, so an `engine` is
    /// refused as an unknown field.
    ScenarioSection {}
}

impl From<ScenarioSection> for ScenarioWorld {
    fn from(section: ScenarioSection) -> Self {
        ScenarioWorld(section.into_spec(WorldEngine::Turmoil))
    }
}

impl WorldSpec {
    /// The world's configuration for `seed`, with a generated workload's `mix` (the default
    /// mix for a script) and no mutant.
    pub fn config(&self, seed: u64, mix: WorkloadMix) -> WorldConfig {
        WorldConfig {
            seed,
            replicas: self.replicas,
            sessions: self.sessions.clone(),
            ttl: Duration::from_millis(self.ttl_ms),
            skew_margin_percent: self.skew_margin_percent,
            duration: Duration::from_secs(self.duration_s),
            call_timeout: Duration::from_millis(self.call_timeout_ms),
            latency_ms: self.latency_ms,
            backend: self.backend.backend(),
            replica_ttl: self.replica_ttl_ms.map(Duration::from_millis),
            mix,
            engine: self.engine,
            ..WorldConfig::default()
        }
    }

    /// Checks the values; `Err((field, message))` names the field and what is allowed.
    pub fn check(&self) -> Result<(), (&'static str, String)> {
        if !(1..=REPLICAS_MAX).contains(&self.replicas) {
            return Err((
                "replicas",
                format!("must be 1..={REPLICAS_MAX}, got {}", self.replicas),
            ));
        }
        self.check_sessions()?;
        if !(1..=TTL_MS_MAX).contains(&self.ttl_ms) {
            return Err((
                "ttl_ms",
                format!("must be 1..={TTL_MS_MAX} ms, got {}", self.ttl_ms),
            ));
        }
        if let Some(ms) = self.replica_ttl_ms
            && !(1..=TTL_MS_MAX).contains(&ms)
        {
            return Err((
                "replica_ttl_ms",
                format!("must be 1..={TTL_MS_MAX} ms, got {ms}"),
            ));
        }
        self.check_backend()?;
        if self.skew_margin_percent > 99 {
            return Err((
                "skew_margin_percent",
                format!("must be 0..=99, got {}", self.skew_margin_percent),
            ));
        }
        if !(1..=DURATION_S_MAX).contains(&self.duration_s) {
            return Err((
                "duration_s",
                format!("must be 1..={DURATION_S_MAX} s, got {}", self.duration_s),
            ));
        }
        if !(1..=CALL_TIMEOUT_MS_MAX).contains(&self.call_timeout_ms) {
            return Err((
                "call_timeout_ms",
                format!(
                    "must be 1..={CALL_TIMEOUT_MS_MAX} ms, got {}",
                    self.call_timeout_ms
                ),
            ));
        }
        let (low, high) = self.latency_ms;
        if low > high || high > 60_000 {
            return Err((
                "latency_ms",
                format!("must be [least, most] with least <= most <= 60000, got [{low}, {high}]"),
            ));
        }
        Ok(())
    }

    /// At least one session, each a valid session id, named once.
    fn check_sessions(&self) -> Result<(), (&'static str, String)> {
        if self.sessions.is_empty() {
            return Err((
                "sessions",
                "give at least one session, e.g. [\"s1\"]".into(),
            ));
        }
        for (index, session) in self.sessions.iter().enumerate() {
            if SessionId::new(session.clone()).is_err() {
                return Err(("sessions", format!("`{session}` is not a valid session id")));
            }
            if self.sessions[..index].contains(session) {
                return Err((
                    "sessions",
                    format!("`{session}` is named twice; name each session once"),
                ));
            }
        }
        Ok(())
    }

    /// A target backend this binary registered; whole seconds of TTL for the kube backend.
    fn check_backend(&self) -> Result<(), (&'static str, String)> {
        if let BackendSpec::Target(spelling) = &self.backend {
            target_backend(spelling).map_err(|message| ("backend", message))?;
        }
        if self.backend == BackendSpec::Kube
            && let Err(message) = check_whole_seconds(Duration::from_millis(self.ttl_ms))
        {
            return Err(("ttl_ms", message));
        }
        Ok(())
    }
}
