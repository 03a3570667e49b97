//! The mutant switch: planted bugs that prove the checkers catch what they claim.
//!
//! A mutant is chosen per instance (per world in simulation, never a global), so parallel
//! runs in one process can run different mutants. Every backend takes `Option<Mutant>`;
//! `None`, the default, is the correct implementation and costs one comparison per call.

use std::fmt;

/// One known-wrong variant of the system under test.
///
/// The catalogue grows with the checkers that must kill each mutant (issue "Mutants").
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Debug)]
#[non_exhaustive]
pub enum Mutant {
    /// A takeover after expiry reuses the expired lease's token instead of advancing it, so
    /// the old and the new holder share one fencing epoch. Killed by the conformance rules
    /// `token_strictly_greater_after_expiry` and `expired_same_owner_reacquire_gets_new_token`.
    TokenNotAdvancedOnExpiry,
}

impl Mutant {
    /// Every mutant, in catalogue order.
    pub const ALL: &'static [Mutant] = &[Mutant::TokenNotAdvancedOnExpiry];

    /// The mutant's name as the CLI spells it (kebab-case).
    pub fn name(self) -> &'static str {
        match self {
            Mutant::TokenNotAdvancedOnExpiry => "token-not-advanced-on-expiry",
        }
    }
}

impl fmt::Display for Mutant {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}
