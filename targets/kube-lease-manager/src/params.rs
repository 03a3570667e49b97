//! The crate's parameters from the world's TTL, in the crate's units (whole seconds), and the
//! validity the adapter grants from them (docs/targets.md#kube-lease-manager).

use std::time::Duration;

use leasesim::sim::backend::renew_period;

/// kube-lease-manager's `LeaseParams` for one world, and the validity the adapter grants.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct Params {
    /// `duration`: the TTL, written to `leaseDurationSeconds`.
    pub duration_s: u64,
    /// `grace`: the holder renews this long before the expiry it computed, so its renew
    /// period is `duration - grace`: a target's renew period ([`renew_period`], a third of
    /// the TTL) rounded down to whole seconds, at least 1.
    pub grace_s: u64,
}

impl Params {
    /// The parameters for a world TTL of `ttl` (whole seconds).
    ///
    /// # Errors
    /// A TTL under 3 s: the crate needs `0 < grace < duration`
    /// (`LeaseParams::new` panics otherwise), and the validity granted
    /// ([`Params::granted_validity`]) must be at least a second.
    pub fn for_ttl(ttl: Duration) -> Result<Params, String> {
        let duration_s = ttl.as_secs();
        let period_s = renew_period(ttl).as_secs().max(1);
        let grace_s = duration_s.saturating_sub(period_s);
        if duration_s < 3 || grace_s <= period_s {
            return Err(format!(
                "kube-lease-manager needs a TTL of at least 3 s (its grace period must be \
                 under the lease duration, and a holder's validity is the grace period less one \
                 renew period), got {} ms; use e.g. ttl_ms = 3000",
                ttl.as_millis()
            ));
        }
        Ok(Params {
            duration_s,
            grace_s,
        })
    }

    /// The crate's renew period: a healthy holder writes `renewTime` this long after its
    /// last write.
    pub fn renew_period(&self) -> Duration {
        Duration::from_secs(self.duration_s - self.grace_s)
    }

    /// How long the adapter's grant (acquire, renew) is valid from the call: what a healthy
    /// holder's Lease surely has left. It renewed at most one renew period ago, and allowing
    /// one more for that write's round trip, its Lease runs at least `grace - period` longer.
    pub fn granted_validity(&self) -> Duration {
        Duration::from_secs(self.grace_s) - self.renew_period()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_ten_second_ttl_renews_every_three_seconds_and_grants_four() {
        let params = Params::for_ttl(Duration::from_secs(10)).unwrap();
        assert_eq!((params.duration_s, params.grace_s), (10, 7));
        assert_eq!(params.renew_period(), Duration::from_secs(3));
        assert_eq!(params.granted_validity(), Duration::from_secs(4));
    }

    #[test]
    fn ttls_under_three_seconds_are_refused() {
        let error = Params::for_ttl(Duration::from_secs(2)).unwrap_err();
        assert!(
            error.contains("at least 3 s") && error.contains("2000 ms"),
            "{error}"
        );
        let three = Params::for_ttl(Duration::from_secs(3)).unwrap();
        assert_eq!(
            (three.grace_s, three.granted_validity()),
            (2, Duration::from_secs(1))
        );
    }
}
