//! kubert's `ClaimParams` from the world's TTL, and the validity the adapter grants from a
//! claim (docs/targets.md#kubert).

use std::time::Duration;

use kubert::lease::ClaimParams;
use leasesim::sim::backend::{check_whole_seconds, renew_period};

/// kubert's claim parameters for one world.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct Params {
    /// `lease_duration`: the TTL. kubert writes it to `leaseDurationSeconds` truncated to
    /// whole seconds (`chrono::Duration::num_seconds`), so the TTL must be whole seconds.
    pub lease_duration: Duration,
    /// `renew_grace_period`: the holder renews this long before its claim's expiry, so it
    /// writes `renewTime` every `lease_duration - renew_grace_period`: a target's renew period
    /// ([`renew_period`], a third of the TTL).
    pub renew_grace_period: Duration,
}

impl Params {
    /// The parameters for a world TTL of `ttl`.
    ///
    /// # Errors
    /// A TTL that is not a whole, non-zero number of seconds ([`check_whole_seconds`]): kubert
    /// writes `leaseDurationSeconds` truncated (`chrono::Duration::num_seconds`), shorter than
    /// the claim it keeps itself.
    pub fn for_ttl(ttl: Duration) -> Result<Params, String> {
        check_whole_seconds(ttl)?;
        Ok(Params {
            lease_duration: ttl,
            renew_grace_period: ttl - renew_period(ttl),
        })
    }

    /// The holder's renew period: it writes `renewTime` this long after its last write.
    pub fn renew_period(&self) -> Duration {
        self.lease_duration - self.renew_grace_period
    }

    /// As kubert takes them.
    pub fn claim_params(&self) -> ClaimParams {
        ClaimParams {
            lease_duration: self.lease_duration,
            renew_grace_period: self.renew_grace_period,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_ten_second_ttl_renews_every_third_of_it() {
        let params = Params::for_ttl(Duration::from_secs(10)).unwrap();
        assert_eq!(params.lease_duration, Duration::from_secs(10));
        assert_eq!(params.renew_period(), Duration::from_secs(10) / 3);
        assert_eq!(
            params.renew_grace_period,
            Duration::from_nanos(6_666_666_667)
        );
    }
}
