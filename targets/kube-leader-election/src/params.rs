//! kube-leader-election's `LeaseLockParams` from the world's TTL, and the loop the crate's
//! docs ask of its caller (docs/targets.md#kube-leader-election).

use std::time::Duration;

use leasesim::sim::backend::{check_whole_seconds, renew_period};

/// The crate's parameters for one world.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct Params {
    /// `lease_ttl`: the TTL. The crate writes it to `leaseDurationSeconds` as
    /// `Duration::as_secs` (truncated), so the TTL must be whole seconds.
    pub lease_ttl: Duration,
    /// How often the holder calls `try_acquire_or_renew`: a target's renew period
    /// ([`renew_period`], a third of the TTL), as the crate's docs suggest too ("if
    /// `lease_ttl` is set to 15 seconds, one should renew it every 5 seconds",
    /// `R/src/lib.rs:21-23`).
    pub renew_period: Duration,
}

impl Params {
    /// The parameters for a world TTL of `ttl`.
    ///
    /// # Errors
    /// A TTL that is not a whole, non-zero number of seconds ([`check_whole_seconds`]): the
    /// crate would write a `leaseDurationSeconds` shorter than the TTL the world grants.
    pub fn for_ttl(ttl: Duration) -> Result<Params, String> {
        check_whole_seconds(ttl)?;
        Ok(Params {
            lease_ttl: ttl,
            renew_period: renew_period(ttl),
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
}
