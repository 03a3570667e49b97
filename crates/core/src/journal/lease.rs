//! `JournalLease`: a held lease as its holder sees it, judged on the holder's own clock.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{OnceCell, watch};

use crate::clock::{Clock, Instant};
use crate::hooks::{HookSlot, PausePoint};
use crate::lease::{Lease, LeaseError, Owner, SessionId, SessionLease};
use crate::mutant::Mutant;
use crate::sync::{Mutex, lock};

use super::StoreConfig;

/// How much of the granted TTL the holder gives up to cover clock drift between itself and
/// the authority. It must cover the worst drift the deployment assumes.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
#[non_exhaustive]
pub enum SkewMargin {
    /// This many percent of the granted TTL (0–99).
    Percent(u8),
    /// A fixed margin; a margin at or above the TTL leaves no validity at all.
    Fixed(Duration),
}

impl Default for SkewMargin {
    /// 10% of the TTL (docs/contracts.md#client-side-validity).
    fn default() -> Self {
        SkewMargin::Percent(10)
    }
}

impl SkewMargin {
    /// The margin for a lease granted with `ttl`.
    pub fn of(self, ttl: Duration) -> Duration {
        match self {
            SkewMargin::Percent(percent) => ttl * u32::from(percent.min(99)) / 100,
            SkewMargin::Fixed(margin) => margin,
        }
    }
}

/// Why a held lease stopped being valid. The first cause observed wins.
#[derive(Clone, PartialEq, Eq, Debug, thiserror::Error)]
pub enum LossCause {
    /// The holder released it.
    #[error("the lease was released")]
    Released,
    /// A renew answered Held: another owner took over, or the record is gone.
    #[error("the lease was overtaken (holder token {holder_token:?})")]
    Overtaken {
        /// The new holder's token, if the authority named one.
        holder_token: Option<u64>,
    },
    /// The holder's own deadline passed without a successful renew.
    #[error("the local validity deadline {valid_until:?} passed without a successful renew")]
    Deadline {
        /// The deadline, on the holder's monotonic clock.
        valid_until: Instant,
    },
}

/// A held lease: the last granted [`Lease`] value plus the holder's local view of its
/// validity. Cloning gives another handle to the same hold.
///
/// Validity rule (docs/contracts.md#client-side-validity): `valid_until = (local time the last
/// successful acquire or renew was sent) + granted ttl − skew margin`, on the holder's own
/// monotonic clock. Only a successful renew moves it; the authority's `expiry` is never used.
/// Once lost (released, overtaken or past the deadline), a hold never becomes valid again.
#[derive(Clone, Debug)]
pub struct JournalLease {
    shared: Arc<Shared>,
}

#[derive(Debug)]
struct Shared {
    authority: Arc<dyn SessionLease>,
    clock: Arc<dyn Clock>,
    skew_margin: SkewMargin,
    hooks: HookSlot,
    /// A planted bug ([`Mutant::NoLocalDeadline`], [`Mutant::ValidityFromAuthorityExpiry`],
    /// [`Mutant::ClientUsesConfiguredTtl`], [`Mutant::ValidityFromReceiptTime`],
    /// [`Mutant::RenewerIgnoresUnexpectedErrors`]; the renewer, the journal and the service
    /// read it too), or `None` for the correct code.
    mutant: Option<Mutant>,
    /// The TTL the holder's own configuration names, if any: ignored by the correct code.
    configured_ttl: Option<Duration>,
    state: Mutex<Hold>,
    lost: watch::Sender<Option<LossCause>>,
    released: OnceCell<Result<(), LeaseError>>,
}

#[derive(Debug)]
struct Hold {
    lease: Lease,
    /// When the last successful acquire or renew was sent, on the holder's clock.
    granted_at: Instant,
    valid_until: Instant,
}

impl JournalLease {
    /// Acquires `session` for `owner` from `authority`, timing the request on `clock`, with
    /// `config`'s skew margin, hooks and mutant (`None`: the correct code). Its
    /// `configured_ttl` is the holder's own configured TTL, which validity ignores in favour
    /// of the granted one.
    ///
    /// # Errors
    /// Whatever the authority's acquire returns.
    pub(crate) async fn acquire(
        authority: Arc<dyn SessionLease>,
        clock: Arc<dyn Clock>,
        config: &StoreConfig,
        session: &SessionId,
        owner: &Owner,
    ) -> Result<Self, LeaseError> {
        let (skew_margin, hooks) = (config.skew_margin, config.hooks.clone());
        let (mutant, configured_ttl) = (config.mutant, config.configured_ttl);
        let sent = clock.now();
        let lease = authority.acquire(session, owner).await?;
        let received = clock.now();
        debug_assert!(
            received >= sent,
            "clock order (docs/contracts.md#time): a monotonic reading {received:?} after {sent:?}"
        );
        hooks.pause_point(PausePoint::AfterGrantReceived).await;
        if configured_ttl.is_some_and(|ttl| ttl != lease.ttl()) {
            tracing::debug!(%session, granted = ?lease.ttl(), configured = ?configured_ttl, "the authority granted another TTL than configured; validity counts the granted one");
        }
        let valid_until = deadline(mutant, configured_ttl, sent, received, &lease, skew_margin);
        Ok(JournalLease {
            shared: Arc::new(Shared {
                authority,
                clock,
                skew_margin,
                hooks,
                mutant,
                configured_ttl,
                state: Mutex::new(Hold {
                    lease,
                    granted_at: sent,
                    valid_until,
                }),
                lost: watch::channel(None).0,
                released: OnceCell::new(),
            }),
        })
    }

    /// The lease value last granted (by acquire or a successful renew).
    pub fn lease(&self) -> Lease {
        lock(&self.shared.state).lease.clone()
    }

    /// The fencing epoch: the lease token.
    pub fn epoch(&self) -> u64 {
        lock(&self.shared.state).lease.token()
    }

    /// The leased session.
    pub fn session(&self) -> SessionId {
        lock(&self.shared.state).lease.session().clone()
    }

    /// When the last successful acquire or renew was sent, on the holder's monotonic clock.
    pub fn granted_at(&self) -> Instant {
        lock(&self.shared.state).granted_at
    }

    /// The local deadline, on the holder's monotonic clock.
    pub fn valid_until(&self) -> Instant {
        lock(&self.shared.state).valid_until
    }

    /// The holder's clock.
    pub fn clock(&self) -> &Arc<dyn Clock> {
        &self.shared.clock
    }

    /// The planted bug this hold runs, if any (`None`: the correct code).
    pub fn mutant(&self) -> Option<Mutant> {
        self.shared.mutant
    }

    /// The harness hooks the hold was acquired with.
    pub(crate) fn hooks(&self) -> &HookSlot {
        &self.shared.hooks
    }

    /// Whether the hold is still valid now; see [`JournalLease::check`].
    pub fn is_valid(&self) -> bool {
        self.check().is_ok()
    }

    /// `Ok` while the lease is valid on the holder's clock and not lost.
    ///
    /// # Errors
    /// The loss cause. Observing the deadline passed records [`LossCause::Deadline`].
    pub fn check(&self) -> Result<(), LossCause> {
        if let Some(cause) = self.loss() {
            return Err(cause);
        }
        let valid_until = self.valid_until();
        if self.shared.mutant == Some(Mutant::NoLocalDeadline) {
            return Ok(()); // trusts the hold until a renew says otherwise
        }
        if self.shared.clock.now() >= valid_until {
            self.mark_lost(LossCause::Deadline { valid_until });
            return Err(self.loss().unwrap_or(LossCause::Deadline { valid_until }));
        }
        Ok(())
    }

    /// The loss cause, if the hold is lost.
    pub fn loss(&self) -> Option<LossCause> {
        self.shared.lost.borrow().clone()
    }

    /// Completes with the cause once the hold is lost (released, overtaken, or its deadline
    /// noticed by [`JournalLease::check`] or the renewer).
    pub async fn lost(&self) -> LossCause {
        let mut rx = self.shared.lost.subscribe();
        let cause = rx.wait_for(Option::is_some).await;
        // The sender lives in `self.shared`, so the channel cannot close while we wait.
        cause
            .ok()
            .and_then(|cause| cause.clone())
            .unwrap_or(LossCause::Released)
    }

    /// Records `cause` unless the hold is already lost. Returns whether this call lost it.
    pub fn mark_lost(&self, cause: LossCause) -> bool {
        self.shared.lost.send_if_modified(|lost| {
            let first = lost.is_none();
            if first {
                *lost = Some(cause);
            }
            first
        })
    }

    /// Sends one renew for the current lease. On success, moves the local deadline to
    /// (send time + granted ttl − margin), unless the hold was lost meanwhile.
    ///
    /// # Errors
    /// [`LeaseError::Held`] (the hold is then lost as [`LossCause::Overtaken`]); transient
    /// errors leave the hold as it was. Renewing a lost hold returns `Held` without a call.
    pub async fn renew(&self) -> Result<(), LeaseError> {
        if self.loss().is_some() {
            return Err(LeaseError::Held { holder_token: None });
        }
        self.shared
            .hooks
            .pause_point(PausePoint::BeforeRenewSend)
            .await;
        let lease = self.lease();
        let sent = self.shared.clock.now();
        match self.shared.authority.renew(&lease).await {
            Ok(renewed) => {
                let received = self.shared.clock.now();
                debug_assert!(
                    received >= sent,
                    "clock order (docs/contracts.md#time): a monotonic reading {received:?} after \
                     {sent:?}"
                );
                debug_assert_eq!(
                    renewed.session(),
                    lease.session(),
                    "a renew answers for the session it renewed (docs/contracts.md#lease)"
                );
                self.shared
                    .hooks
                    .pause_point(PausePoint::AfterGrantReceived)
                    .await;
                self.renewed(sent, received, renewed);
                Ok(())
            }
            // The planted bug counts an answer the contract does not name as a renewal.
            Err(LeaseError::Unexpected { status })
                if self.shared.mutant == Some(Mutant::RenewerIgnoresUnexpectedErrors) =>
            {
                tracing::debug!(session = %lease.session(), %status, "renew answered an unexpected status; counted as renewed");
                let received = self.shared.clock.now();
                self.renewed(sent, received, lease);
                Ok(())
            }
            Err(LeaseError::Held { holder_token }) => {
                self.mark_lost(LossCause::Overtaken { holder_token });
                Err(LeaseError::Held { holder_token })
            }
            Err(other) => Err(other),
        }
    }

    /// Moves the local deadline for a renewal sent at `sent` (and answered at `received`)
    /// that granted `renewed`, unless the hold was lost meanwhile.
    fn renewed(&self, sent: Instant, received: Instant, renewed: Lease) {
        if self.loss().is_some() {
            return;
        }
        let valid_until = deadline(
            self.shared.mutant,
            self.shared.configured_ttl,
            sent,
            received,
            &renewed,
            self.shared.skew_margin,
        );
        let mut hold = lock(&self.shared.state);
        debug_assert!(
            sent >= hold.granted_at,
            "clock order (docs/contracts.md#time): a renew sent at {sent:?} before the grant it \
             renews ({:?})",
            hold.granted_at
        );
        hold.valid_until = valid_until;
        hold.granted_at = sent;
        hold.lease = renewed;
    }

    /// Marks the hold lost ([`LossCause::Released`] unless already lost) and releases it at
    /// the authority, once: later and concurrent calls share the first call's result.
    ///
    /// # Errors
    /// Transient errors of the authority's release; the lease then ends at its expiry.
    pub async fn release(&self) -> Result<(), LeaseError> {
        self.mark_lost(LossCause::Released);
        self.release_at_authority().await
    }

    /// Releases at the authority once (sharing [`JournalLease::release`]'s result) without
    /// marking the hold lost, so it still passes [`JournalLease::check`]: only
    /// [`Mutant::CleanupBeforeInvalidate`]'s shutdown calls it on its own.
    pub(crate) async fn release_at_authority(&self) -> Result<(), LeaseError> {
        let shared = &self.shared;
        shared
            .released
            .get_or_init(|| async {
                let lease = lock(&shared.state).lease.clone();
                shared.authority.release(&lease).await
            })
            .await
            .clone()
    }
}

/// The local deadline of a grant of `lease` whose request was sent at `sent` (and whose
/// reply arrived at `received`): `sent + granted ttl − margin`.
/// [`Mutant::ValidityFromAuthorityExpiry`] takes the authority's `expiry − margin` instead, a
/// reading of another host's clock used as one of this host's;
/// [`Mutant::ValidityFromReceiptTime`] counts from `received`, so a reply that arrived late
/// stretches the hold past the authority's expiry; [`Mutant::ClientUsesConfiguredTtl`] counts
/// `configured_ttl` (when set) instead of the granted TTL.
fn deadline(
    mutant: Option<Mutant>,
    configured_ttl: Option<Duration>,
    sent: Instant,
    received: Instant,
    lease: &Lease,
    margin: SkewMargin,
) -> Instant {
    let ttl = match configured_ttl {
        Some(configured) if mutant == Some(Mutant::ClientUsesConfiguredTtl) => configured,
        _ => lease.ttl(),
    };
    debug_assert!(
        matches!(margin, SkewMargin::Fixed(_)) || margin.of(ttl) <= ttl,
        "client-side validity (docs/contracts.md#client-side-validity): a percentage margin \
         {margin:?} exceeds the TTL {ttl:?}"
    );
    let margin = margin.of(ttl);
    match mutant {
        Some(Mutant::ValidityFromAuthorityExpiry) => lease.expiry().saturating_sub(margin),
        Some(Mutant::ValidityFromReceiptTime) => received + ttl.saturating_sub(margin),
        _ => sent + ttl.saturating_sub(margin),
    }
}
