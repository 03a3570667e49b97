//! `DurableLease`: the lease service's authority — [`MemLease`] plus durable token
//! high-water marks and a restart grace period.
//!
//! Two facts must survive a crash (docs/contracts.md#tokens,
//! docs/contracts.md#the-authoritys-grace-period):
//! - each session's token high-water mark, written before a takeover is acknowledged, so a
//!   restarted authority never grants a token twice;
//! - how long a lease granted before the crash might still be live. The authority keeps a
//!   durable countdown of the longest remaining lifetime of any lease it granted, lowered
//!   with its own uptime every `grace_persist_interval`; after a restart it grants nothing
//!   until that much uptime has passed. Downtime counts as zero (conservative), and each
//!   incarnation's uptime is counted, so repeated restarts never extend the grace beyond
//!   about one TTL of accumulated uptime.
//!
//! # On disk
//! - [`STATE_FILE`]: a [`log`] file (format version [`log::FORMAT_VERSION`]: frames carry
//!   their seq and a chained checksum) whose frame 0 is a `FileHeader` (kind `lease-state`,
//!   version [`STATE_SCHEMA_VERSION`]) and whose later frames are high-water marks and grace
//!   countdowns.
//! - [`STATE_CHECKPOINT`]: a [checkpoint](leasesim_core::storage::checkpoint) of how many frames of
//!   [`STATE_FILE`] were written (and its length and last checksum), synced after each write
//!   and before the grant is acknowledged. A state file cut halfway, to its header or to 0
//!   bytes, or deleted is refused at open ([`StorageError::BehindCheckpoint`]) instead of
//!   reissuing tokens or shortening the grace period.
//!
//! Files of format version 1 are refused with [`StorageError::Version`], not upgraded.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use prost::Message;
use tokio::sync::Mutex;

use crate::proto::{self, lease_state_record::Kind};
use leasesim_core::clock::{Clock, Instant};
use leasesim_core::lease::{Lease, LeaseError, MemLease, Owner, SessionId, SessionLease};
use leasesim_core::mutant::Mutant;
use leasesim_core::storage::checkpoint::Checkpoint;
use leasesim_core::storage::log::Position;
use leasesim_core::storage::{Storage, StorageError, log};

/// The file holding the authority's durable state.
pub const STATE_FILE: &str = "lease-state.log";

/// The checkpoint of [`STATE_FILE`]: how far it was acknowledged.
pub const STATE_CHECKPOINT: &str = "lease-state-checkpoint.log";

/// Schema version of [`STATE_FILE`]'s `FileHeader` (2: the chained log format).
pub const STATE_SCHEMA_VERSION: u32 = 2;

const STATE_KIND: &str = "lease-state";

/// Settings of a [`DurableLease`].
#[derive(Clone, Debug)]
pub struct DurableLeaseConfig {
    /// TTL of every lease granted (default 10 s).
    pub ttl: Duration,
    /// How often the grace countdown is lowered on storage (default 1 s). A crash loses at
    /// most this much of the countdown's progress.
    pub grace_persist_interval: Duration,
    /// A planted bug in the authority's rules ([`MemLease::with_mutant`]); none by default.
    pub mutant: Option<leasesim_core::mutant::Mutant>,
    /// Harness hooks the authority reports its observations to ([`MemLease::with_hooks`]);
    /// none by default.
    pub hooks: leasesim_core::hooks::HookSlot,
    /// Start even when the state checkpoint is missing, rebuilding it from the state file as
    /// it is (`serve lease --rebuild-checkpoint`, [`Checkpoint::require`]); off by default:
    /// the service refuses to start then, since a cut state file would reissue tokens.
    pub rebuild_checkpoint: bool,
}

impl Default for DurableLeaseConfig {
    fn default() -> Self {
        DurableLeaseConfig {
            ttl: Duration::from_secs(10),
            grace_persist_interval: Duration::from_secs(1),
            mutant: None,
            hooks: leasesim_core::hooks::HookSlot::default(),
            rebuild_checkpoint: false,
        }
    }
}

impl DurableLeaseConfig {
    /// Longest accepted `ttl`: one day. A restarted authority grants nothing for up to one
    /// TTL, and the authority adds the TTL to instants on its clock, which must not overflow.
    /// The service's own bound on its configuration, not the harness's `TTL_MS_MAX` (which
    /// keeps a simulated run within a day, docs/world.md#limits): the system under test
    /// imports no harness crate, and the two may differ.
    pub const MAX_TTL: Duration = Duration::from_secs(24 * 60 * 60);

    /// Longest accepted `grace_persist_interval`: one hour. A crash loses up to this much of
    /// the grace countdown's progress, so the next restart waits that much longer.
    pub const MAX_GRACE_PERSIST_INTERVAL: Duration = Duration::from_secs(60 * 60);

    /// The default settings with leases of `ttl`.
    pub fn with_ttl(ttl: Duration) -> Self {
        DurableLeaseConfig {
            ttl,
            ..Self::default()
        }
    }

    /// Checks that `ttl` and `grace_persist_interval` are non-zero and within
    /// [`Self::MAX_TTL`] and [`Self::MAX_GRACE_PERSIST_INTERVAL`].
    ///
    /// # Errors
    /// A message naming the setting, its value and the accepted range.
    pub fn check(&self) -> Result<(), String> {
        check_range("ttl", self.ttl, Self::MAX_TTL)?;
        check_range(
            "grace_persist_interval",
            self.grace_persist_interval,
            Self::MAX_GRACE_PERSIST_INTERVAL,
        )
    }
}

fn check_range(name: &str, value: Duration, max: Duration) -> Result<(), String> {
    if value.is_zero() || value > max {
        return Err(format!(
            "{name} is {value:?}; it must be positive and at most {}",
            humantime::format_duration(max)
        ));
    }
    Ok(())
}

/// The lease authority of the lease service: [`MemLease`]'s rules, with state that survives
/// crashes and a grace period after restarts.
#[derive(Debug)]
pub struct DurableLease {
    inner: MemLease,
    storage: Arc<dyn Storage>,
    clock: Arc<dyn Clock>,
    config: DurableLeaseConfig,
    grace_until: Instant,
    /// Bytes of torn tail recovery cut from [`STATE_FILE`] at open.
    recovered_cut_bytes: u64,
    state: Mutex<Persisted>,
}

/// What is on storage, as this incarnation last wrote it.
#[derive(Debug)]
struct Persisted {
    high_water: BTreeMap<SessionId, u64>,
    /// The grace countdown as last written (not decayed: a restart reads this value).
    grace_stored: Duration,
    /// Latest expiry of any lease granted by this incarnation.
    latest_expiry: Instant,
    /// Set when a write failed: its outcome is unknown, so the authority stops granting
    /// until it is restarted and has recovered.
    broken: Option<String>,
    /// Where [`STATE_FILE`] ends.
    end: Position,
    checkpoint: Checkpoint,
}

impl DurableLease {
    /// Recovers the authority's state from `storage` (creating it when new) and starts the
    /// grace period: nothing is granted until the recovered countdown has run out on
    /// `clock`. Run [`DurableLease::persist_grace`] beside it.
    ///
    /// A damaged last frame is cut as a torn tail (the log cannot tell a torn write from a
    /// frame that rotted on disk): that is logged as a warning and reported by
    /// [`DurableLease::recovered_cut_bytes`].
    ///
    /// # Errors
    /// Storage errors, and [`StorageError::Corrupt`] for a state file this version cannot
    /// read.
    ///
    /// # Panics
    /// When `config` fails [`DurableLeaseConfig::check`] (callers validate their input first).
    pub async fn open(
        storage: Arc<dyn Storage>,
        clock: Arc<dyn Clock>,
        config: DurableLeaseConfig,
    ) -> Result<Self, StorageError> {
        if let Err(problem) = config.check() {
            panic!("DurableLease::open: bad DurableLeaseConfig: {problem}");
        }
        let header = proto::FileHeader {
            v: STATE_SCHEMA_VERSION,
            kind: STATE_KIND.into(),
            session: String::new(),
        }
        .encode_to_vec();
        let mut checkpoint = Checkpoint::open(&*storage, STATE_CHECKPOINT).await?;
        // Before anything is cut.
        let present = storage.list().await?.iter().any(|f| f == STATE_FILE);
        checkpoint.require(
            if present { &[STATE_FILE] } else { &[] },
            config.rebuild_checkpoint,
        )?;
        if checkpoint.was_missing() && !present {
            // A new service: the checkpoint goes first, so no crash leaves a state file
            // without one (which [`Checkpoint::require`] takes for damage).
            checkpoint.rewrite(&*storage, BTreeMap::new()).await?;
        }
        let mut recovered = checkpoint.recover(&*storage, STATE_FILE).await?;
        warn_if_cut(STATE_FILE, recovered.truncated_bytes);
        log::create_if_empty(&*storage, STATE_FILE, &mut recovered, &header).await?;
        debug_assert!(
            !recovered.frames.is_empty(),
            "frame bounds: {STATE_FILE} starts with its header frame once created"
        );
        let end = recovered.end();
        let positions = BTreeMap::from([(STATE_FILE.to_string(), end)]);
        checkpoint.rewrite(&*storage, positions).await?;
        let (high_water, grace) = replay(&recovered)?;
        let inner = MemLease::new(clock.clone(), config.ttl)
            .with_mutant(config.mutant)
            .with_hooks(config.hooks.clone());
        if config.mutant != Some(Mutant::TokenCounterInMemory) {
            for (session, token) in &high_water {
                inner.restore_high_water(session, *token);
            }
        }
        let now = clock.now();
        // The planted bugs: no grace period at all (a pre-crash grant may still be live), or a
        // full TTL at every restart whatever was left of the countdown (a series of restarts
        // then refuses grants for ever).
        let grace = match config.mutant {
            Some(Mutant::NoGracePeriod) => Duration::ZERO,
            Some(Mutant::GraceResetOnRestart) if !grace.is_zero() => config.ttl,
            _ => grace,
        };
        let grace_until = saturating_add(now, grace);
        debug_assert!(
            grace_until >= now,
            "the grace period (docs/contracts.md#the-authoritys-grace-period) ends no \
             earlier than the restart"
        );
        Ok(DurableLease {
            inner,
            storage,
            config,
            // Saturating: the countdown is read from disk and must not be able to panic here.
            grace_until,
            recovered_cut_bytes: recovered.truncated_bytes,
            state: Mutex::new(Persisted {
                high_water,
                grace_stored: grace,
                latest_expiry: now,
                broken: None,
                end,
                checkpoint,
            }),
            clock,
        })
    }

    /// The owner and token of the session's current record, if any ([`MemLease::holder`]).
    pub fn holder(&self, session: &SessionId) -> Option<(Owner, u64)> {
        self.inner.holder(session)
    }

    /// Deletes the session's record if it has expired, keeping its high-water mark (garbage
    /// collection; [`MemLease::collect_expired_record`]), judged at `now` on the authority's
    /// clock. Returns whether it deleted.
    pub fn collect_expired_record(&self, session: &SessionId, now: Instant) -> bool {
        self.inner.collect_expired_record(session, now)
    }

    /// When the restart grace period ends, on the authority's clock.
    pub fn grace_until(&self) -> Instant {
        self.grace_until
    }

    /// Bytes of torn tail cut from the end of [`STATE_FILE`] when this authority opened
    /// (0 when the file was intact). Non-zero after a crash during a write, or a last frame
    /// damaged on disk that was never acknowledged (a damaged acknowledged frame is refused by
    /// the checkpoint instead).
    pub fn recovered_cut_bytes(&self) -> u64 {
        self.recovered_cut_bytes
    }

    /// How much of the restart grace period is left now.
    pub fn grace_left(&self) -> Duration {
        self.grace_until.saturating_duration_since(self.clock.now())
    }

    /// Lowers the durable grace countdown every `grace_persist_interval`, forever: run it as
    /// a task beside the service. Write failures break the authority (see
    /// [`DurableLease::acquire`]) and end the task.
    pub async fn persist_grace(&self) {
        loop {
            self.clock.sleep(self.config.grace_persist_interval).await;
            let mut state = self.state.lock().await;
            if state.broken.is_some() {
                return;
            }
            let now = self.clock.now();
            let needed = state
                .latest_expiry
                .max(self.grace_until)
                .saturating_duration_since(now);
            if needed < state.grace_stored
                && let Err(error) = self.write(&mut state, &[grace_frame(needed)]).await
            {
                tracing::error!(target: "leasesim::lease::durable", %error, "cannot persist the grace countdown; refusing grants");
                return;
            }
            state.grace_stored = state.grace_stored.min(needed);
            debug_assert!(
                state.grace_stored <= needed,
                "the grace countdown only falls between grants: stored {:?}, needed {needed:?}",
                state.grace_stored
            );
        }
    }

    fn check_grace(&self) -> Result<(), LeaseError> {
        let now = self.clock.now();
        if now < self.grace_until {
            let left = self.grace_until - now;
            return Err(LeaseError::Unavailable {
                reason: format!("lease authority restarted: grace period, {left:?} left"),
            });
        }
        Ok(())
    }

    /// Makes `lease` durable before it is acknowledged: a new high-water mark, and a grace
    /// countdown of at least one TTL.
    async fn persist_grant(&self, state: &mut Persisted, lease: &Lease) -> Result<(), LeaseError> {
        let mut frames = Vec::new();
        let known = state.high_water.get(lease.session()).copied().unwrap_or(0);
        if lease.token() > known && self.config.mutant != Some(Mutant::TokenCounterInMemory) {
            frames.push(high_water_frame(lease.session(), lease.token()));
        }
        if state.grace_stored < self.config.ttl {
            frames.push(grace_frame(self.config.ttl));
        }
        self.write(state, &frames).await?;
        if lease.token() > known {
            state
                .high_water
                .insert(lease.session().clone(), lease.token());
        }
        debug_assert!(
            state.high_water.get(lease.session()).copied().unwrap_or(0) >= lease.token().max(known),
            "tokens never fall (docs/contracts.md#tokens): the persisted high-water mark of {} \
             covers every token granted",
            lease.session()
        );
        state.grace_stored = state.grace_stored.max(self.config.ttl);
        state.latest_expiry = state.latest_expiry.max(lease.expiry());
        Ok(())
    }

    async fn write(&self, state: &mut Persisted, frames: &[Vec<u8>]) -> Result<(), LeaseError> {
        let payloads: Vec<&[u8]> = frames.iter().map(Vec::as_slice).collect();
        let storage = &*self.storage;
        let outcome = async {
            let end = log::append_frames(storage, STATE_FILE, state.end, &payloads).await?;
            state.checkpoint.record(storage, STATE_FILE, end).await?;
            Ok::<_, StorageError>(end)
        };
        let before = state.end;
        match outcome.await {
            Ok(end) => {
                assert_eq!(
                    end.frames,
                    before.frames + frames.len() as u64,
                    "seq continuity: {STATE_FILE} grows by one frame per record written"
                );
                state.end = end;
                Ok(())
            }
            Err(error) => {
                let reason = format!("lease state write failed: {error}; restart the service");
                state.broken = Some(reason.clone());
                Err(LeaseError::Unavailable { reason })
            }
        }
    }

    async fn grant(
        &self,
        call: impl std::future::Future<Output = Result<Lease, LeaseError>>,
    ) -> Result<Lease, LeaseError> {
        self.check_grace()?;
        let mut state = self.state.lock().await;
        if let Some(reason) = &state.broken {
            return Err(LeaseError::Unavailable {
                reason: reason.clone(),
            });
        }
        let lease = call.await?;
        self.persist_grant(&mut state, &lease).await?;
        Ok(lease)
    }
}

#[async_trait]
impl SessionLease for DurableLease {
    /// [`MemLease::acquire`], refused with [`LeaseError::Unavailable`] during the grace
    /// period or after a failed write; acknowledged only once durable.
    async fn acquire(&self, session: &SessionId, owner: &Owner) -> Result<Lease, LeaseError> {
        self.grant(self.inner.acquire(session, owner)).await
    }

    async fn renew(&self, lease: &Lease) -> Result<Lease, LeaseError> {
        self.grant(self.inner.renew(lease)).await
    }

    async fn release(&self, lease: &Lease) -> Result<(), LeaseError> {
        self.inner.release(lease).await
    }
}

/// `at + d`, or the last representable instant: a far-off deadline, never a panic.
fn saturating_add(at: Instant, d: Duration) -> Instant {
    Instant::from_origin(at.since_origin().saturating_add(d))
}

/// Tells the operator that recovery cut `bytes` from the end of `file`: a write torn by a
/// crash, never acknowledged (the checkpoint refuses a cut below what was acknowledged),
/// unless the checkpoint itself was missing.
fn warn_if_cut(file: &str, bytes: u64) {
    if bytes > 0 {
        tracing::warn!(target: "leasesim::lease::durable",
            "recovery cut {bytes} bytes from the end of `{file}`: a write torn by a crash or a \
             last frame damaged on disk, in either case past the last acknowledged write (the \
             checkpoint shows those intact); if the service did not crash, check the disk"
        );
    }
}

fn high_water_frame(session: &SessionId, token: u64) -> Vec<u8> {
    let kind = Kind::HighWater(proto::HighWater {
        session: session.as_str().to_owned(),
        token,
    });
    proto::LeaseStateRecord { kind: Some(kind) }.encode_to_vec()
}

fn grace_frame(remaining: Duration) -> Vec<u8> {
    let ns = u64::try_from(remaining.as_nanos()).unwrap_or(u64::MAX);
    let kind = Kind::GraceRemainingNs(ns);
    proto::LeaseStateRecord { kind: Some(kind) }.encode_to_vec()
}

/// The high-water marks and the last grace countdown in a recovered state file.
fn replay(
    recovered: &log::Recovered,
) -> Result<(BTreeMap<SessionId, u64>, Duration), StorageError> {
    let frames = &recovered.frames;
    let corrupt = |index: usize, reason: String| StorageError::Corrupt {
        file: STATE_FILE.into(),
        offset: recovered.frame_start(index),
        reason: format!("frame seq {index}: {reason}"),
    };
    let header = proto::FileHeader::decode(frames[0].as_slice())
        .map_err(|e| corrupt(0, format!("bad header: {e}")))?;
    if header.v != STATE_SCHEMA_VERSION || header.kind != STATE_KIND {
        let found = format!("kind {:?} version {}", header.kind, header.v);
        return Err(corrupt(
            0,
            format!("expected {STATE_KIND} version {STATE_SCHEMA_VERSION}, found {found}"),
        ));
    }
    let mut high_water = BTreeMap::new();
    let mut grace = Duration::ZERO;
    for (index, frame) in frames.iter().enumerate().skip(1) {
        let record = proto::LeaseStateRecord::decode(frame.as_slice())
            .map_err(|e| corrupt(index, e.to_string()))?;
        match record.kind {
            Some(Kind::HighWater(mark)) => {
                let session =
                    SessionId::new(mark.session).map_err(|e| corrupt(index, e.to_string()))?;
                let token = high_water.entry(session).or_insert(0);
                *token = mark.token.max(*token);
            }
            Some(Kind::GraceRemainingNs(ns)) => grace = Duration::from_nanos(ns),
            None => return Err(corrupt(index, "empty record".into())),
        }
    }
    Ok((high_water, grace))
}
