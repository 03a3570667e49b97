//! kube-leader-election's `LeaseLockParams` from the world's TTL, and the loop the crate's
//! docs ask of its caller (docs/targets.md#kube-leader-election).

use std::time::Duration;

/// The crate's parameters for one world.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct Params {
    /// `lease_ttl`: the TTL. The crate writes it to `leaseDurationSeconds` as
    /// `Duration::as_secs` (truncated), so the TTL must be whole seconds.
    pub lease_ttl: Duration,
    /// How often the holder calls `try_acquire_or_renew`: a third of the TTL, as the crate's
    /// docs suggest ("if `lease_ttl` is set to 15 seconds, one should renew it every 5
    /// seconds", `R/src/lib.rs:21-23`) and as leasesim's renewer renews
    /// (src/service/renewer.rs).
    pub renew_period: Duration,
}

impl Params {
    /// The parameters for a world TTL of `ttl`.
    ///
    /// # Errors
    /// A TTL that is not a whole, non-zero number of seconds: the crate would write a
    /// `leaseDurationSeconds` shorter than the TTL the world grants.
    pub fn for_ttl(ttl: Duration) -> Result<Params, String> {
        if ttl.is_zero() || ttl.subsec_nanos() != 0 {
            return Err(format!(
                "kube-leader-election writes leaseDurationSeconds truncated to whole seconds, \
                 so the TTL must be whole seconds, got {} ms; use e.g. ttl_ms = {}",
                ttl.as_millis(),
                ttl.as_secs().max(1) * 1_000
            ));
        }
        Ok(Params {
            lease_ttl: ttl,
            renew_period: ttl / 3,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_fifteen_second_ttl_renews_every_five_seconds() {
        let params = Params::for_ttl(Duration::from_secs(15)).unwrap();
        assert_eq!(params.lease_ttl, Duration::from_secs(15));
        assert_eq!(params.renew_period, Duration::from_secs(5));
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
