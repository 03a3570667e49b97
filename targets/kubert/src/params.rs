//! kubert's `ClaimParams` from the world's TTL, and the validity the adapter grants from a
//! claim (docs/targets.md#kubert).

use std::time::Duration;

use kubert::lease::ClaimParams;

/// kubert's claim parameters for one world.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct Params {
    /// `lease_duration`: the TTL. kubert writes it to `leaseDurationSeconds` truncated to
    /// whole seconds (`chrono::Duration::num_seconds`), so the TTL must be whole seconds.
    pub lease_duration: Duration,
    /// `renew_grace_period`: the holder renews this long before its claim's expiry, so it
    /// writes `renewTime` every `lease_duration - renew_grace_period`: the world's renew
    /// interval, TTL / 3 (as leasesim's renewer renews: src/service/renewer.rs).
    pub renew_grace_period: Duration,
}

impl Params {
    /// The parameters for a world TTL of `ttl`.
    ///
    /// # Errors
    /// A TTL that is not a whole, non-zero number of seconds: kubert would write a
    /// `leaseDurationSeconds` shorter than the claim it keeps itself.
    pub fn for_ttl(ttl: Duration) -> Result<Params, String> {
        if ttl.is_zero() || ttl.subsec_nanos() != 0 {
            return Err(format!(
                "kubert writes leaseDurationSeconds truncated to whole seconds, so the TTL must \
                 be whole seconds, got {} ms; use e.g. ttl_ms = {}",
                ttl.as_millis(),
                ttl.as_secs().max(1) * 1_000
            ));
        }
        Ok(Params {
            lease_duration: ttl,
            renew_grace_period: ttl - ttl / 3,
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

    #[test]
    fn ttls_of_part_seconds_are_refused_naming_the_truncation() {
        let error = Params::for_ttl(Duration::from_millis(2500)).unwrap_err();
        assert!(
            error.contains("truncated") && error.contains("2500 ms") && error.contains("2000"),
            "{error}"
        );
        assert!(Params::for_ttl(Duration::ZERO).is_err());
        assert!(Params::for_ttl(Duration::from_secs(1)).is_ok());
    }
}
