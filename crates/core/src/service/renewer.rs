//! The renewer: keeps a held lease alive every `ttl / 3` until it is lost.

use std::ops::ControlFlow;
use std::time::Duration;

use crate::journal::{JournalLease, LossCause};
use crate::lease::LeaseError;
use crate::mutant::Mutant;

/// Backoff between renew attempts after a transient error.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
#[non_exhaustive]
pub struct Backoff {
    /// First wait (default 100 ms).
    pub min: Duration,
    /// Longest wait; each retry doubles up to it (default 1 s).
    pub max: Duration,
}

impl Default for Backoff {
    fn default() -> Self {
        Backoff {
            min: Duration::from_millis(100),
            max: Duration::from_secs(1),
        }
    }
}

/// Renews `lease` at `granted_at + ttl / 3` (of the granted TTL) after each success, until
/// the hold is lost. Transient errors are retried with `backoff` while the local deadline
/// has not passed; when it passes, the hold is lost as [`LossCause::Deadline`] whatever
/// calls are still in flight (a hung renew is dropped, never waited for). `Held` loses it
/// as overtaken. Returns the loss cause.
pub async fn renew_until_lost(lease: JournalLease, backoff: Backoff) -> LossCause {
    let clock = lease.clock().clone();
    loop {
        let next = lease.granted_at() + lease.lease().ttl() / 3;
        tokio::select! {
            biased;
            cause = lease.lost() => return cause,
            () = clock.sleep_until(next) => {}
        }
        if let Err(cause) = renew_before_deadline(&lease, backoff).await {
            return cause;
        }
    }
}

/// One renewal: attempts until one succeeds, the hold is lost, or the deadline passes.
async fn renew_before_deadline(lease: &JournalLease, backoff: Backoff) -> Result<(), LossCause> {
    if lease.mutant() == Some(Mutant::NoLocalDeadline) {
        return renew_until_held(lease, backoff).await;
    }
    let clock = lease.clock().clone();
    let mut wait = backoff.min;
    loop {
        let deadline = lease.valid_until();
        tokio::select! {
            biased;
            cause = lease.lost() => return Err(cause),
            () = clock.sleep_until(deadline) => lease.check()?,
            renewed = lease.renew() => match settle(lease, renewed, wait) {
                ControlFlow::Break(settled) => return settled,
                ControlFlow::Continue(()) => {
                    tokio::select! {
                        biased;
                        cause = lease.lost() => return Err(cause),
                        () = clock.sleep_until(deadline) => lease.check()?,
                        () = clock.sleep(wait) => {}
                    }
                    wait = (wait * 2).min(backoff.max);
                    debug_assert!(wait <= backoff.max, "the renew backoff is capped at its max");
                }
            },
        }
    }
}

/// [`Mutant::NoLocalDeadline`]: renews until a call succeeds or answers `Held`, retrying
/// transient errors (and waiting out hung calls) for as long as it takes; the local deadline
/// is never consulted, so the hold is trusted until the authority says it is gone.
async fn renew_until_held(lease: &JournalLease, backoff: Backoff) -> Result<(), LossCause> {
    let clock = lease.clock().clone();
    let mut wait = backoff.min;
    loop {
        tokio::select! {
            biased;
            cause = lease.lost() => return Err(cause),
            renewed = lease.renew() => if let ControlFlow::Break(settled) = settle(lease, renewed, wait) {
                return settled;
            },
        }
        tokio::select! {
            biased;
            cause = lease.lost() => return Err(cause),
            () = clock.sleep(wait) => {}
        }
        wait = (wait * 2).min(backoff.max);
        debug_assert!(
            wait <= backoff.max,
            "the renew backoff is capped at its max"
        );
    }
}

/// What one renew call's answer means: renewed or lost (`Held`: overtaken, unless the hold
/// was already lost for another cause) ends the renewal; a transient error, logged, is
/// retried after `wait`.
fn settle(
    lease: &JournalLease,
    renewed: Result<(), LeaseError>,
    wait: Duration,
) -> ControlFlow<Result<(), LossCause>> {
    match renewed {
        Ok(()) => ControlFlow::Break(Ok(())),
        Err(LeaseError::Held { holder_token }) => {
            tracing::warn!(session = %lease.session(), ?holder_token, "lease overtaken");
            ControlFlow::Break(Err(lease
                .loss()
                .unwrap_or(LossCause::Overtaken { holder_token })))
        }
        Err(transient) => {
            tracing::debug!(session = %lease.session(), error = %transient, ?wait, "renew failed; retrying");
            ControlFlow::Continue(())
        }
    }
}
