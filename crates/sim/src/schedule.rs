//! Fault schedules: the nemesis as data — a list of (time, fault) that can be saved, edited,
//! replayed and shrunk (docs/world.md#faults).
//!
//! JSON shape (schema version 1):
//! ```json
//! {"v": 1, "faults": [
//!   {"at_ms": 2000, "fault": "pause", "host": "replica-1", "duration_ms": 15000,
//!    "at_point": "before_append_send"},
//!   {"at_ms": 3000, "fault": "partition", "a": "replica-1", "b": "lease"}
//! ]}
//! ```
//! Hosts are named as in the world: `lease`, `ledger`, `replica-1` … `replica-N`.

use serde::{Deserialize, Serialize};

use crate::script::ForkMode;
use crate::versioned;
use leasesim_core::hooks::PausePoint;
use leasesim_history::hosts;

/// Schema version of schedule files.
pub const SCHEDULE_SCHEMA_VERSION: u32 = 1;

/// A fault schedule: faults in the order they are applied.
#[derive(Clone, PartialEq, Eq, Debug, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FaultSchedule {
    /// Schema version ([`SCHEDULE_SCHEMA_VERSION`]).
    pub v: u32,
    /// The faults, by time (ties keep file order).
    pub faults: Vec<ScheduledFault>,
    /// When the nemesis heals everything (repairs and releases every link, ends every
    /// freeze once it is over) and the liveness phase starts, in ms; by default at the end of
    /// the run, so a fault without a duration (a partition) lasts the whole run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub heal_at_ms: Option<u64>,
}

/// One fault at one time.
#[derive(Clone, PartialEq, Eq, Debug, Serialize, Deserialize)]
pub struct ScheduledFault {
    /// True simulated time at which it is applied, in ms from the start.
    pub at_ms: u64,
    /// The fault.
    #[serde(flatten)]
    pub fault: Fault,
    /// Whom the fault strikes, resolved when it strikes (`"target": {"holder": "s1"}`), in
    /// place of the one replica the fault names; absent (and left out of the file): the
    /// replica it names (docs/world.md#faults-aimed-at-the-holder).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target: Option<Target>,
}

/// A target a fault is aimed at, resolved when it strikes (after Jepsen's nemesis targets,
/// `:primaries`): docs/world.md#faults-aimed-at-the-holder.
#[derive(Clone, PartialEq, Eq, Debug, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum Target {
    /// `{"holder": "s1"}`: the replica holding the session when the fault strikes, as the
    /// authority decided; the replica the fault names when nobody holds it.
    Holder(String),
}

/// A fault the nemesis can apply. Durations are in ms of true simulated time.
#[derive(Clone, PartialEq, Eq, Debug, Serialize, Deserialize)]
#[serde(tag = "fault", rename_all = "snake_case", deny_unknown_fields)]
pub enum Fault {
    /// Cut the link between two hosts both ways; connections with data in flight die.
    Partition {
        /// One host.
        a: String,
        /// The other.
        b: String,
    },
    /// Drop everything from `from` to `to` (replies still flow the other way).
    PartitionOneWay {
        /// Sender whose messages are lost.
        from: String,
        /// Receiver.
        to: String,
    },
    /// Cut every link of a host.
    Isolate {
        /// The host.
        host: String,
    },
    /// Repair every link, release every held link and end every latency change.
    Heal,
    /// Hold messages between two hosts (delivered, in order, on release).
    Hold {
        /// One host.
        a: String,
        /// The other.
        b: String,
    },
    /// Deliver what was held between two hosts.
    Release {
        /// One host.
        a: String,
        /// The other.
        b: String,
    },
    /// Set the latency of one link: each message takes `latency_ms` plus up to `jitter_ms`
    /// more (drawn by turmoil from the network seed).
    Latency {
        /// One host.
        a: String,
        /// The other.
        b: String,
        /// Least one-way latency.
        latency_ms: u64,
        /// Extra latency range on top (0: fixed latency).
        #[serde(default)]
        jitter_ms: u64,
    },
    /// Random link failures on one link (turmoil's fail rate: a failed link kills its
    /// connections), as parts per million per tick.
    LinkFlaps {
        /// One host.
        a: String,
        /// The other.
        b: String,
        /// Failure probability per tick, in ppm (0 turns flaps off).
        fail_ppm: u32,
    },
    /// Stop-the-world pause of a host: its tasks block at their next pause point or clock
    /// wait; its monotonic clock runs on.
    Pause {
        /// The host.
        host: String,
        /// How long.
        duration_ms: u64,
        /// Start when a task first reaches this point (at or after `at_ms`) instead of at
        /// `at_ms`.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        at_point: Option<PausePoint>,
    },
    /// A pause whose monotonic clock stops too (a VM or laptop suspend).
    Suspend {
        /// The host.
        host: String,
        /// How long.
        duration_ms: u64,
        /// As for [`Fault::Pause`].
        #[serde(default, skip_serializing_if = "Option::is_none")]
        at_point: Option<PausePoint>,
    },
    /// Block only the task that reaches `point`, for a while; the rest of the host runs.
    Stall {
        /// The host.
        host: String,
        /// The point.
        point: PausePoint,
        /// How long.
        duration_ms: u64,
    },
    /// Make the task of a replica that first reaches `point` (at or after `at_ms`) panic
    /// there: a worker that panics mid-run. The service must stop the run's renewer and
    /// release its lease; the replica goes on. Only points a run's work reaches
    /// ([`PausePoint::WORKER`]), never the renewer's.
    WorkerPanic {
        /// The replica.
        host: String,
        /// The point.
        point: PausePoint,
    },
    /// Set a host's monotonic clock drift, in ppm (negative: slow).
    ClockDrift {
        /// The host.
        host: String,
        /// Drift in parts per million.
        ppm: i64,
    },
    /// Step a host's wall clock (forward or back); monotonic time is untouched.
    WallJump {
        /// The host.
        host: String,
        /// The step, in ms.
        delta_ms: i64,
    },
    /// Set a host's wall clock offset (replacing earlier offsets and jumps); monotonic time is
    /// untouched.
    WallOffset {
        /// The host.
        host: String,
        /// The offset, in ms.
        offset_ms: i64,
    },
    /// `fork(2)` of a replica's process, on a backend whose replicas are processes of one
    /// host (`flock`): the child shares the parent's open file descriptions and ends as
    /// `mode` says (docs/world.md#flock-in-the-world).
    Fork {
        /// The replica.
        host: String,
        /// How the child ends.
        mode: ForkMode,
    },
    /// Crash a host: volatile state is lost, synced storage survives, unsynced is lost.
    Crash {
        /// The host.
        host: String,
    },
    /// Start a crashed host again (a new incarnation).
    Restart {
        /// The host.
        host: String,
    },
    /// Crash and restart the lease service `count` times, every `every_ms`: each restart is a
    /// crash followed, `downtime_ms` later, by a start (at once without it). A heal ends the
    /// series: restarts not yet made are dropped, a service still down starts again.
    LeaseServiceRestarts {
        /// Interval between restarts.
        every_ms: u64,
        /// How many.
        count: u32,
        /// How long the service stays down at each restart, less than `every_ms` (absent: a
        /// bounce, down for no simulated time).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        downtime_ms: Option<u64>,
    },
    /// Garbage-collect a session's lease record at the authority: deleted if it has
    /// expired on the authority's clock, kept if live; the token high-water mark survives.
    DeleteLeaseRecord {
        /// The session.
        session: String,
    },
    /// Hold the link between `from` and `to` both ways for `delay_ms` (e.g. beyond the TTL),
    /// then deliver what it held. HTTP/2 keepalive pings are held too, so a connection with a
    /// call in flight dies after the keepalive timeout; see [`Fault::HoldReplies`] for replies
    /// that arrive late on a live connection.
    DelayReplies {
        /// The replying host.
        from: String,
        /// The host waiting for replies.
        to: String,
        /// How long.
        delay_ms: u64,
    },
    /// Hold the replies a service `from` (`lease`, `ledger`, `apiserver`) sends to replica
    /// `to` for `duration_ms`, then deliver them in order, one way only: `to`'s requests still
    /// reach `from`, and HTTP/2 connection frames (keepalive pings and their acks, settings)
    /// keep flowing both ways, so the connection survives and a reply held beyond the TTL
    /// does arrive — if the call's deadline (`call_timeout_ms`) outlasts the hold.
    HoldReplies {
        /// The replying service.
        from: String,
        /// The replica waiting for replies.
        to: String,
        /// How long.
        duration_ms: u64,
    },
    /// The lease authority (the `lease` service, or the Kubernetes API server of the kube
    /// backend) answers the calls of replica `to` (every caller without it) with `status` for
    /// `duration_ms` and applies nothing. The correct client treats the answer as neither
    /// success nor loss (docs/contracts.md#service): a renewer retries it only while its
    /// local deadline lasts, then gives the lease up. Old files' `apiserver_errors` with a
    /// `code` (403, 500, 503) read as this fault.
    #[serde(alias = "apiserver_errors")]
    AuthorityErrors {
        /// How long.
        duration_ms: u64,
        /// The answer.
        #[serde(alias = "code")]
        status: ErrorStatus,
        /// The replica whose calls are answered so (absent: every caller).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        to: Option<String>,
    },
}

/// An answer the authority gives that the lease contract does not name: one word for every
/// backend, each backend's protocol spelling it its own way. The API server answers each with
/// the `Status` body the Kubernetes API documents for it (docs/apiserver.md#error-windows).
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Debug, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", try_from = "StatusSpelling")]
pub enum ErrorStatus {
    /// gRPC INTERNAL; HTTP 500 InternalError.
    Internal,
    /// gRPC UNAVAILABLE (without the refusal marker: the outcome is unknown); HTTP 503
    /// ServiceUnavailable.
    Unavailable,
    /// gRPC PERMISSION_DENIED; HTTP 403 Forbidden.
    PermissionDenied,
    /// gRPC ABORTED; HTTP 409 Conflict (a write only: reads pass).
    Conflict,
    /// gRPC INVALID_ARGUMENT; HTTP 422 Invalid (a write only: reads pass).
    Invalid,
    /// gRPC RESOURCE_EXHAUSTED; HTTP 429 TooManyRequests with `Retry-After`.
    TooManyRequests,
    /// gRPC DEADLINE_EXCEEDED; HTTP 504 Timeout.
    Timeout,
}

impl ErrorStatus {
    /// Every status, in the order a file's spelling is looked up.
    pub const ALL: [ErrorStatus; 7] = [
        ErrorStatus::Internal,
        ErrorStatus::Unavailable,
        ErrorStatus::PermissionDenied,
        ErrorStatus::Conflict,
        ErrorStatus::Invalid,
        ErrorStatus::TooManyRequests,
        ErrorStatus::Timeout,
    ];

    /// The statuses an `authority_errors` window draws unless a swarm profile names others
    /// (`error_statuses`), in drawing order: the three there were before the others, so
    /// every existing seed draws what it drew (docs/campaigns.md#swarm-profiles).
    pub const DRAWN_BY_DEFAULT: [ErrorStatus; 3] = [
        ErrorStatus::Internal,
        ErrorStatus::Unavailable,
        ErrorStatus::PermissionDenied,
    ];

    /// The HTTP status code (an API server's answer).
    pub fn http_code(self) -> u16 {
        match self {
            ErrorStatus::Internal => 500,
            ErrorStatus::Unavailable => 503,
            ErrorStatus::PermissionDenied => 403,
            ErrorStatus::Conflict => 409,
            ErrorStatus::Invalid => 422,
            ErrorStatus::TooManyRequests => 429,
            ErrorStatus::Timeout => 504,
        }
    }

    /// The gRPC status code (the lease service's answer).
    pub fn grpc_code(self) -> tonic::Code {
        match self {
            ErrorStatus::Internal => tonic::Code::Internal,
            ErrorStatus::Unavailable => tonic::Code::Unavailable,
            ErrorStatus::PermissionDenied => tonic::Code::PermissionDenied,
            ErrorStatus::Conflict => tonic::Code::Aborted,
            ErrorStatus::Invalid => tonic::Code::InvalidArgument,
            ErrorStatus::TooManyRequests => tonic::Code::ResourceExhausted,
            ErrorStatus::Timeout => tonic::Code::DeadlineExceeded,
        }
    }

    /// Whether the API server answers reads with it too: a real server answers 409 and 422
    /// only to writes, so a window of either lets reads through.
    pub fn answers_reads(self) -> bool {
        !matches!(self, ErrorStatus::Conflict | ErrorStatus::Invalid)
    }
}

/// How a file may spell an [`ErrorStatus`]: its name, or (files from before
/// `authority_errors`) the HTTP code of `apiserver_errors`.
#[derive(Deserialize)]
#[serde(untagged)]
enum StatusSpelling {
    Name(String),
    Code(u16),
}

impl TryFrom<StatusSpelling> for ErrorStatus {
    type Error = String;

    fn try_from(spelling: StatusSpelling) -> Result<Self, String> {
        let found = ErrorStatus::ALL.into_iter().find(|status| match &spelling {
            StatusSpelling::Name(name) => serde_json::to_value(status)
                .is_ok_and(|value| value.as_str() == Some(name.as_str())),
            StatusSpelling::Code(code) => status.http_code() == *code,
        });
        found.ok_or_else(|| {
            let given = match spelling {
                StatusSpelling::Name(name) => format!("`{name}`"),
                StatusSpelling::Code(code) => code.to_string(),
            };
            format!(
                "unknown status {given}; a status is internal, unavailable, permission_denied, \
                 conflict, invalid, too_many_requests or timeout (HTTP 500, 503, 403, 409, 422, \
                 429, 504)"
            )
        })
    }
}

impl Fault {
    /// The hosts the fault names (to check them, or to rename them: e.g. the lease host to a
    /// backend's host).
    pub fn hosts_mut(&mut self) -> Vec<&mut String> {
        match self {
            Fault::Partition { a, b }
            | Fault::Hold { a, b }
            | Fault::Release { a, b }
            | Fault::Latency { a, b, .. }
            | Fault::LinkFlaps { a, b, .. } => vec![a, b],
            Fault::PartitionOneWay { from, to }
            | Fault::DelayReplies { from, to, .. }
            | Fault::HoldReplies { from, to, .. } => vec![from, to],
            Fault::AuthorityErrors { to: Some(to), .. } => vec![to],
            Fault::Isolate { host }
            | Fault::Pause { host, .. }
            | Fault::Suspend { host, .. }
            | Fault::Stall { host, .. }
            | Fault::WorkerPanic { host, .. }
            | Fault::ClockDrift { host, .. }
            | Fault::WallJump { host, .. }
            | Fault::WallOffset { host, .. }
            | Fault::Crash { host }
            | Fault::Fork { host, .. }
            | Fault::Restart { host } => vec![host],
            Fault::Heal
            | Fault::LeaseServiceRestarts { .. }
            | Fault::DeleteLeaseRecord { .. }
            | Fault::AuthorityErrors { to: None, .. } => Vec::new(),
        }
    }
}

impl Fault {
    /// The one replica the fault names, if it names exactly one (a fault with a
    /// [`Target`] strikes the target in its place): a replica's freeze, clock fault, crash,
    /// isolation, or a link between it and a service; `None` for a fault on services only,
    /// or on a link between two replicas.
    pub fn replica_mut(&mut self) -> Option<&mut String> {
        let mut replicas = self.hosts_mut().into_iter().filter(|h| is_replica(h));
        let one = replicas.next();
        match replicas.next() {
            None => one,
            Some(_) => None,
        }
    }
}

impl ScheduledFault {
    /// Checks a target names a fault that strikes one replica.
    fn check_target(&self) -> Result<(), String> {
        if self.target.is_none() || self.fault.clone().replica_mut().is_some() {
            return Ok(());
        }
        Err(
            "a fault aimed at a holder (`target`) strikes one replica in place of the one it \
             names: it must name exactly one replica (a freeze, clock fault, crash or \
             isolation of a replica, or a link between a replica and a service)"
                .to_owned(),
        )
    }
}

/// What a schedule is checked against: the numbers of one world it needs, as plain data (so
/// the schedule, a file format live mode reads too, depends on no world configuration; the
/// world's configuration gives them with `WorldConfig::schedule_bounds`).
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct ScheduleBounds {
    /// Every host of the world, as faults name them.
    pub hosts: Vec<String>,
    /// The world's sessions (a `delete_lease_record` names one).
    pub sessions: Vec<String>,
    /// The run's duration, ms.
    pub duration_ms: u64,
    /// The lease TTL, ms (named when a run would last too long).
    pub ttl_ms: u64,
    /// LIVE's bound after the heal, µs, when the run has a liveness phase; `None`: the run
    /// ends at its duration.
    pub live_bound_us: Option<u64>,
}

/// A schedule that cannot be applied to a world.
#[derive(Clone, PartialEq, Eq, Debug, thiserror::Error)]
#[error("{}{reason}", index.map_or(String::new(), |i| format!("fault {i} (at {at_ms} ms): ")))]
pub struct ScheduleError {
    /// Position in the schedule, from 0; `None` for the schedule as a whole (its heal, the
    /// length of the run).
    pub index: Option<usize>,
    /// The fault's time, or the heal's.
    pub at_ms: u64,
    /// What is wrong and how to fix it.
    pub reason: String,
}

impl FaultSchedule {
    /// The most new boots the schedule can give `host`: one for each crash or restart that
    /// may strike it (a fault aimed at the holder may strike any replica, so it counts for
    /// each), and each restart of a lease service series if `host` is the `authority`. A
    /// replica that stops by itself in the liveness phase is started again, unscheduled.
    pub fn boots_at_most(&self, host: &str, authority: &str) -> usize {
        let strikes = |named: &str, target: &Option<Target>| {
            named == host || (target.is_some() && is_replica(host))
        };
        self.faults
            .iter()
            .map(|scheduled| match &scheduled.fault {
                Fault::Crash { host: named } | Fault::Restart { host: named }
                    if strikes(named, &scheduled.target) =>
                {
                    1
                }
                Fault::LeaseServiceRestarts { count, .. } if host == authority => *count as usize,
                _ => 0,
            })
            .sum()
    }

    /// An empty schedule.
    pub fn new() -> Self {
        FaultSchedule {
            v: SCHEDULE_SCHEMA_VERSION,
            faults: Vec::new(),
            heal_at_ms: None,
        }
    }

    /// Adds `fault` at `at_ms`.
    pub fn at(mut self, at_ms: u64, fault: Fault) -> Self {
        self.faults.push(ScheduledFault {
            at_ms,
            fault,
            target: None,
        });
        self
    }

    /// Adds `fault` at `at_ms`, aimed at `target` (it names the replica struck when the
    /// target resolves to none).
    pub fn at_target(mut self, at_ms: u64, fault: Fault, target: Target) -> Self {
        self.faults.push(ScheduledFault {
            at_ms,
            fault,
            target: Some(target),
        });
        self
    }

    /// The same schedule, healing everything at `heal_at_ms`.
    pub fn heal_at(mut self, heal_at_ms: u64) -> Self {
        self.heal_at_ms = Some(heal_at_ms);
        self
    }

    /// Parses a schedule file's text.
    ///
    /// # Errors
    /// A message naming the line and column of malformed JSON, an unknown fault or field, or
    /// a wrong schema version.
    pub fn from_json(text: &str) -> Result<Self, String> {
        versioned::from_json(text, "schedule", SCHEDULE_SCHEMA_VERSION, |s: &Self| s.v)
    }

    /// The schedule as pretty JSON.
    pub fn to_json(&self) -> String {
        versioned::to_json(self, "schedule")
    }

    /// The faults ordered by time (stable for ties).
    pub fn sorted(&self) -> Vec<ScheduledFault> {
        let mut faults = self.faults.clone();
        faults.sort_by_key(|f| f.at_ms);
        faults
    }

    /// Checks the schedule can be applied to a world with `hosts` (`lease`, `ledger`,
    /// `replica-N`): every host named exists, values are in range ([`limits`]; drift within [`super::clock::MIN_DRIFT_PPM`] and [`super::clock::MAX_DRIFT_PPM`]), pause
    /// points are ones the host reaches, and everything is healed after the last fault.
    ///
    /// # Errors
    /// The first fault that cannot be applied, saying why and what is allowed.
    pub fn validate(&self, hosts: &[String]) -> Result<(), ScheduleError> {
        for (index, scheduled) in self.faults.iter().enumerate() {
            let error = |reason: String| ScheduleError {
                index: Some(index),
                at_ms: scheduled.at_ms,
                reason,
            };
            for host in scheduled.fault.clone().hosts_mut() {
                if !hosts.iter().any(|h| h == host.as_str()) {
                    return Err(error(format!(
                        "unknown host `{host}`; this world has {}",
                        hosts.join(", ")
                    )));
                }
            }
            scheduled.fault.check_values().map_err(error)?;
            scheduled.check_target().map_err(error)?;
            if let Some(heal_at_ms) = self.heal_at_ms
                && scheduled.at_ms > heal_at_ms
            {
                return Err(error(format!(
                    "comes after heal_at_ms = {heal_at_ms}; faults must come before the heal"
                )));
            }
        }
        Ok(())
    }

    /// Checks the schedule against a whole world's `bounds`: as [`FaultSchedule::validate`]
    /// with its hosts, every `delete_lease_record` and holder target names one of its sessions, `heal_at_ms` lies within
    /// the run (at most its duration), and the run, liveness phase included, ends within
    /// [`limits::RUN_MS_MAX`] ([`run_end_ms`]).
    ///
    /// # Errors
    /// The first fault that cannot be applied, or (without an index) a heal or a run length
    /// over its bound, saying which bound and what to change.
    pub fn validate_in(&self, bounds: &ScheduleBounds) -> Result<(), ScheduleError> {
        self.validate(&bounds.hosts)?;
        for (index, scheduled) in self.faults.iter().enumerate() {
            let named = match (&scheduled.fault, &scheduled.target) {
                (Fault::DeleteLeaseRecord { session }, _) | (_, Some(Target::Holder(session))) => {
                    Some(session)
                }
                _ => None,
            };
            if let Some(session) = named
                && !bounds.sessions.contains(session)
            {
                return Err(ScheduleError {
                    index: Some(index),
                    at_ms: scheduled.at_ms,
                    reason: format!(
                        "unknown session `{session}`; the world's sessions are {}",
                        bounds.sessions.join(", ")
                    ),
                });
            }
        }
        let whole = |reason: String| ScheduleError {
            index: None,
            at_ms: self.heal_at_ms.unwrap_or(0),
            reason,
        };
        let duration_ms = bounds.duration_ms;
        if let Some(heal_at_ms) = self.heal_at_ms
            && heal_at_ms > duration_ms
        {
            return Err(whole(format!(
                "heal_at_ms = {heal_at_ms} is after the end of the run ({duration_ms} ms); \
                 the heal must come within the run"
            )));
        }
        check_run_end(
            bounds,
            self.heal_at_ms.unwrap_or(duration_ms),
            self.longest_freeze_end_ms(),
        )
        .map_err(whole)
    }

    /// The latest true simulated time a run within `bounds` on this schedule can reach, ms
    /// ([`run_end_ms`] at its heal, or the end of the run without one, and its freezes).
    pub fn run_end_ms(&self, bounds: &ScheduleBounds) -> u64 {
        let duration_ms = bounds.duration_ms;
        run_end_ms(
            bounds,
            self.heal_at_ms.unwrap_or(duration_ms),
            self.longest_freeze_end_ms(),
        )
    }

    /// When the last freeze (pause, suspend, stall) ends at the latest, ms; 0 without one.
    fn longest_freeze_end_ms(&self) -> u64 {
        self.faults
            .iter()
            .filter(|f| {
                matches!(
                    f.fault,
                    Fault::Pause { .. } | Fault::Suspend { .. } | Fault::Stall { .. }
                )
            })
            .filter_map(|f| f.fault.duration_ms().map(|d| f.at_ms.saturating_add(d)))
            .max()
            .unwrap_or(0)
    }
}

/// The latest true simulated time a run within `bounds` can reach, ms, when it heals at
/// `heal_ms` and its freezes end by `freeze_end_ms`: the end of its duration, or with the
/// liveness phase the heal (which waits for frozen hosts) plus LIVE's bound after it (TTL +
/// grace period + 3 renew intervals + the longest reconnect backoff, about 3 TTLs).
pub fn run_end_ms(bounds: &ScheduleBounds, heal_ms: u64, freeze_end_ms: u64) -> u64 {
    let duration_ms = bounds.duration_ms;
    let Some(live_bound_us) = bounds.live_bound_us else {
        return duration_ms;
    };
    let live_ms = live_bound_us.div_ceil(1_000);
    let healed = heal_ms.max(freeze_end_ms);
    duration_ms.max(healed.saturating_add(live_ms).saturating_add(1))
}

/// Refuses a run that would go on past [`limits::RUN_MS_MAX`] (see [`run_end_ms`]).
///
/// # Errors
/// A message naming the bound, the run's end and what to lower.
pub fn check_run_end(
    bounds: &ScheduleBounds,
    heal_ms: u64,
    freeze_end_ms: u64,
) -> Result<(), String> {
    let end_ms = run_end_ms(bounds, heal_ms, freeze_end_ms);
    if end_ms <= limits::RUN_MS_MAX {
        return Ok(());
    }
    let freezes = if freeze_end_ms > heal_ms {
        format!(", freezes over by {freeze_end_ms} ms")
    } else {
        String::new()
    };
    Err(format!(
        "the run would last until {end_ms} ms of simulated time (duration {} ms, heal at \
         {heal_ms} ms{freezes}, then the liveness phase of about 3 TTLs with ttl_ms = {}); a whole run \
         must end within {} ms (one simulated day): lower ttl_ms, duration_s, the heal or the \
         freezes",
        bounds.duration_ms,
        bounds.ttl_ms,
        limits::RUN_MS_MAX
    ))
}

/// Ranges every fault's values must lie in (wider ranges are never useful and overflow the
/// arithmetic of time): the harness's one set of limits (docs/world.md#limits); a whole run
/// ends within [`limits::RUN_MS_MAX`] ([`run_end_ms`]).
pub use leasesim_history::limits;

impl Fault {
    /// Checks the fault's own values; `Err` says what is wrong.
    fn check_values(&self) -> Result<(), String> {
        self.check_numbers()?;
        self.check_hosts()
    }

    /// Checks the fault's numbers against [`limits`].
    fn check_numbers(&self) -> Result<(), String> {
        use super::clock::{MAX_DRIFT_PPM, MIN_DRIFT_PPM};
        use limits::*;
        if let Some(duration) = self.duration_ms()
            && !(1..=DURATION_MS_MAX).contains(&duration)
        {
            return Err(format!(
                "a duration must be 1..={DURATION_MS_MAX} ms, got {duration}"
            ));
        }
        match self {
            Fault::ClockDrift { ppm, .. } if !(MIN_DRIFT_PPM..=MAX_DRIFT_PPM).contains(ppm) => Err(
                format!("drift must be {MIN_DRIFT_PPM}..={MAX_DRIFT_PPM} ppm, got {ppm}"),
            ),
            Fault::LinkFlaps { fail_ppm, .. } if *fail_ppm > FAIL_PPM_MAX => Err(format!(
                "fail_ppm must be 0..={FAIL_PPM_MAX}, got {fail_ppm}"
            )),
            Fault::Latency {
                latency_ms,
                jitter_ms,
                ..
            } if latency_ms.saturating_add(*jitter_ms) > DURATION_MS_MAX => Err(format!(
                "latency + jitter must be at most {DURATION_MS_MAX} ms"
            )),
            Fault::LeaseServiceRestarts { count, .. } if !(1..=RESTARTS_MAX).contains(count) => {
                Err(format!("count must be 1..={RESTARTS_MAX}, got {count}"))
            }
            Fault::LeaseServiceRestarts {
                every_ms,
                downtime_ms: Some(downtime_ms),
                ..
            } if *downtime_ms == 0 || downtime_ms >= every_ms => Err(format!(
                "a restart's downtime_ms must be 1..{every_ms} (below every_ms, so one restart \
                 ends before the next), got {downtime_ms}"
            )),
            Fault::WallJump { delta_ms: ms, .. } | Fault::WallOffset { offset_ms: ms, .. }
                if ms.unsigned_abs() > WALL_MS_MAX.unsigned_abs() =>
            {
                Err(format!(
                    "a wall-clock step must be within ±{WALL_MS_MAX} ms, got {ms}"
                ))
            }
            _ => Ok(()),
        }
    }

    /// Checks the hosts, links and pause points the fault names fit its kind.
    fn check_hosts(&self) -> Result<(), String> {
        match self {
            Fault::HoldReplies { from, to, .. } if !is_service(from) || !is_replica(to) => {
                Err(format!(
                    "hold_replies holds a service's replies to a replica: `from` is lease, \
                     ledger or apiserver and `to` a replica, got from `{from}` to `{to}`"
                ))
            }
            Fault::AuthorityErrors { to: Some(to), .. } if !is_replica(to) => Err(format!(
                "authority_errors answers a replica's calls: `to` must be a replica, got `{to}`"
            )),
            Fault::Fork { host, .. } if !is_replica(host) => Err(format!(
                "fork forks a replica's process: `host` must be a replica, got `{host}`"
            )),
            Fault::Partition { a, b }
            | Fault::Hold { a, b }
            | Fault::Release { a, b }
            | Fault::Latency { a, b, .. }
            | Fault::LinkFlaps { a, b, .. }
            | Fault::PartitionOneWay { from: a, to: b }
            | Fault::DelayReplies { from: a, to: b, .. }
            | Fault::HoldReplies { from: a, to: b, .. }
                if a == b =>
            {
                Err(format!("a link joins two different hosts, got `{a}` twice"))
            }
            Fault::Pause {
                host,
                at_point: Some(point),
                ..
            }
            | Fault::Suspend {
                host,
                at_point: Some(point),
                ..
            }
            | Fault::Stall { host, point, .. } => check_point(host, *point),
            Fault::WorkerPanic { host, point } => {
                check_point(host, *point)?;
                if PausePoint::WORKER.contains(point) {
                    return Ok(());
                }
                let names: Vec<&str> = PausePoint::WORKER.iter().map(|p| p.name()).collect();
                Err(format!(
                    "a worker panics only where a run's work goes: {}; got {}",
                    names.join(", "),
                    point.name()
                ))
            }
            _ => Ok(()),
        }
    }
}

fn is_service(host: &str) -> bool {
    host == hosts::LEASE || host == hosts::LEDGER || host == hosts::APISERVER
}

fn is_replica(host: &str) -> bool {
    hosts::is_replica(host)
}

/// Service hosts reach only [`PausePoint::ServiceHandlerStart`]; replicas reach every other.
fn check_point(host: &str, point: PausePoint) -> Result<(), String> {
    let service = is_service(host);
    if service == (point == PausePoint::ServiceHandlerStart) {
        return Ok(());
    }
    let reachable: Vec<&str> = PausePoint::ALL
        .iter()
        .filter(|p| service == (**p == PausePoint::ServiceHandlerStart))
        .map(|p| p.name())
        .collect();
    Err(format!(
        "`{host}` never reaches {point:?}; it reaches {}",
        reachable.join(", ")
    ))
}

impl Fault {
    /// The fault's duration (or interval), for faults that have one.
    pub fn duration_ms(&self) -> Option<u64> {
        match self {
            Fault::Pause { duration_ms, .. }
            | Fault::Suspend { duration_ms, .. }
            | Fault::Stall { duration_ms, .. }
            | Fault::HoldReplies { duration_ms, .. }
            | Fault::AuthorityErrors { duration_ms, .. } => Some(*duration_ms),
            Fault::DelayReplies { delay_ms, .. } => Some(*delay_ms),
            Fault::LeaseServiceRestarts { every_ms, .. } => Some(*every_ms),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The hosts of a two-replica world.
    pub(super) fn hosts() -> Vec<String> {
        ["lease", "ledger", "replica-1", "replica-2"]
            .map(String::from)
            .to_vec()
    }

    #[test]
    fn a_schedule_round_trips_through_json() {
        let schedule = FaultSchedule::new()
            .at(
                2_000,
                Fault::Pause {
                    host: "replica-1".into(),
                    duration_ms: 15_000,
                    at_point: Some(PausePoint::BeforeAppendSend),
                },
            )
            .at(
                3_000,
                Fault::ClockDrift {
                    host: "replica-1".into(),
                    ppm: -400_000,
                },
            )
            .at(9_000, Fault::Heal);
        let text = schedule.to_json();
        assert_eq!(FaultSchedule::from_json(&text), Ok(schedule));
    }

    #[test]
    fn the_json_shape_is_flat_and_snake_case() {
        let schedule = FaultSchedule::new().at(
            5,
            Fault::Crash {
                host: "lease".into(),
            },
        );
        let json = serde_json::to_string(&schedule).unwrap();
        assert_eq!(
            json,
            r#"{"v":1,"faults":[{"at_ms":5,"fault":"crash","host":"lease"}]}"#
        );
    }

    #[test]
    fn bad_schedules_say_what_is_wrong() {
        let unknown =
            FaultSchedule::from_json(r#"{"v":1,"faults":[{"at_ms":1,"fault":"meteor"}]}"#);
        assert!(unknown.unwrap_err().contains("unknown variant `meteor`"));
        let version = FaultSchedule::from_json(r#"{"v":2,"faults":[]}"#);
        assert!(version.unwrap_err().contains("version 2 is not supported"));
        let host = FaultSchedule::new().at(
            7,
            Fault::Isolate {
                host: "replica-9".into(),
            },
        );
        let error = host.validate(&hosts()).unwrap_err();
        assert_eq!((error.index, error.at_ms), (Some(0), 7));
        assert!(error.reason.contains("unknown host `replica-9`"), "{error}");
        let zero = FaultSchedule::new().at(
            0,
            Fault::Stall {
                host: "replica-1".into(),
                point: PausePoint::BeforeRenewSend,
                duration_ms: 0,
            },
        );
        let reason = zero.validate(&hosts()).unwrap_err().reason;
        assert_eq!(reason, "a duration must be 1..=86400000 ms, got 0");
    }
}

#[cfg(test)]
mod authority_fault_tests {
    use super::tests::hosts;
    use super::*;

    fn reason(fault: Fault) -> String {
        let schedule = FaultSchedule::new().at(1, fault);
        schedule.validate(&hosts()).unwrap_err().reason
    }

    #[test]
    fn a_reply_hold_runs_from_a_service_to_a_replica() {
        let hold = |from: &str, to: &str| Fault::HoldReplies {
            from: from.into(),
            to: to.into(),
            duration_ms: 12_000,
        };
        let ok = FaultSchedule::new().at(1, hold("lease", "replica-2"));
        assert_eq!(ok.validate(&hosts()), Ok(()));
        assert!(
            reason(hold("replica-2", "lease")).contains("`from` is lease, ledger or apiserver")
        );
        assert!(reason(hold("lease", "ledger")).contains("`to` a replica"));
    }

    #[test]
    fn error_windows_name_a_replica_and_old_files_still_read() {
        let errors = |to: Option<&str>| Fault::AuthorityErrors {
            duration_ms: 5_000,
            status: ErrorStatus::PermissionDenied,
            to: to.map(String::from),
        };
        assert!(reason(errors(Some("ledger"))).contains("`to` must be a replica"));
        let json = r#"{"v":1,"faults":[{"at_ms":1,"fault":"authority_errors","duration_ms":5000,"status":"permission_denied","to":"replica-1"}]}"#;
        assert_eq!(
            FaultSchedule::from_json(json),
            Ok(FaultSchedule::new().at(1, errors(Some("replica-1"))))
        );
        let old = r#"{"v":1,"faults":[{"at_ms":1,"fault":"apiserver_errors","duration_ms":5000,"code":500}]}"#;
        let read = FaultSchedule::from_json(old).unwrap();
        assert!(matches!(
            read.faults[0].fault,
            Fault::AuthorityErrors {
                status: ErrorStatus::Internal,
                to: None,
                ..
            }
        ));
        // Written back in the new spelling.
        assert!(read.to_json().contains(r#""fault": "authority_errors""#));
        assert!(read.to_json().contains(r#""status": "internal""#));
    }

    #[test]
    fn a_restarts_downtime_ends_before_the_next_restart() {
        let series = |downtime_ms| Fault::LeaseServiceRestarts {
            every_ms: 4_000,
            count: 3,
            downtime_ms: Some(downtime_ms),
        };
        assert_eq!(
            FaultSchedule::new().at(1, series(1_000)).validate(&hosts()),
            Ok(())
        );
        assert!(reason(series(4_000)).contains("downtime_ms must be 1..4000"));
        assert!(reason(series(0)).contains("downtime_ms must be 1..4000"));
    }
}

#[cfg(test)]
mod target_tests {
    use super::tests::hosts;
    use super::*;

    fn pause(host: &str) -> Fault {
        Fault::Pause {
            host: host.into(),
            duration_ms: 5_000,
            at_point: None,
        }
    }

    fn holder(session: &str) -> Target {
        Target::Holder(session.into())
    }

    #[test]
    fn a_holder_target_is_written_beside_the_fault_and_read_back() {
        let schedule = FaultSchedule::new().at_target(2_000, pause("replica-1"), holder("s1"));
        let json = serde_json::to_string(&schedule).unwrap();
        assert_eq!(
            json,
            r#"{"v":1,"faults":[{"at_ms":2000,"fault":"pause","host":"replica-1","duration_ms":5000,"target":{"holder":"s1"}}]}"#
        );
        assert_eq!(FaultSchedule::from_json(&json), Ok(schedule));
        let unknown = json.replace(r#"{"holder":"s1"}"#, r#"{"primary":"s1"}"#);
        let error = FaultSchedule::from_json(&unknown).unwrap_err();
        assert!(error.contains("unknown variant `primary`"), "{error}");
    }

    #[test]
    fn a_schedule_without_targets_reads_and_writes_as_before() {
        let json = r#"{"v":1,"faults":[{"at_ms":5,"fault":"crash","host":"replica-2"}]}"#;
        let schedule = FaultSchedule::from_json(json).unwrap();
        assert_eq!(schedule.faults[0].target, None);
        assert_eq!(serde_json::to_string(&schedule).unwrap(), json);
    }

    #[test]
    fn only_a_fault_that_strikes_one_replica_takes_a_holder_target() {
        let aimed = |fault| FaultSchedule::new().at_target(1, fault, holder("s1"));
        let partition = |a: &str, b: &str| Fault::Partition {
            a: a.into(),
            b: b.into(),
        };
        assert_eq!(aimed(pause("replica-2")).validate(&hosts()), Ok(()));
        assert_eq!(
            aimed(partition("replica-2", "lease")).validate(&hosts()),
            Ok(())
        );
        for fault in [
            pause("lease"),
            partition("replica-1", "replica-2"),
            Fault::Heal,
        ] {
            let error = aimed(fault.clone()).validate(&hosts()).unwrap_err();
            assert!(
                error.reason.contains("must name exactly one replica"),
                "{fault:?}: {error}"
            );
        }
    }

    #[test]
    fn a_holder_target_names_a_session_of_the_world() {
        let bounds = ScheduleBounds {
            hosts: hosts(),
            sessions: vec!["s1".into()],
            duration_ms: 60_000,
            ttl_ms: 10_000,
            live_bound_us: None,
        };
        let schedule =
            |session| FaultSchedule::new().at_target(1, pause("replica-1"), holder(session));
        assert_eq!(schedule("s1").validate_in(&bounds), Ok(()));
        let error = schedule("s9").validate_in(&bounds).unwrap_err();
        assert_eq!(
            error.reason,
            "unknown session `s9`; the world's sessions are s1"
        );
    }
}
