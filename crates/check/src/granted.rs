//! What a grant or a renew decision granted: the one place the checkers read either kind.

use leasesim_history::Decision;

/// The terms of a granted acquire or renew (a `decision` line's `grant` or `renew`).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) struct Granted {
    /// The lease's token.
    pub(crate) token: u64,
    /// Expiry on the authority's monotonic clock, µs.
    pub(crate) expiry_authority_us: u64,
    /// The TTL granted, µs.
    pub(crate) ttl_us: u64,
}

impl Granted {
    /// What `decision` granted: `None` for a release or a refusal.
    pub(crate) fn of(decision: &Decision) -> Option<Granted> {
        match *decision {
            Decision::Grant {
                token,
                expiry_authority_us,
                ttl_us,
            }
            | Decision::Renew {
                token,
                expiry_authority_us,
                ttl_us,
            } => Some(Granted {
                token,
                expiry_authority_us,
                ttl_us,
            }),
            Decision::Release { .. } | Decision::Refuse { .. } => None,
        }
    }
}
