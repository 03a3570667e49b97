//! The eleven checks of docs/checks.md, as one type: the nine invariants and the two
//! linearizability checks.
//!
//! Every file format spells a check by its name ([`Check::name`]: `TOKEN`, `LIN-LEASE`, …):
//! scenario TOML (`expect.violate`), run files, `results.jsonl` and `summary.json`. A
//! [`Check`] serialises as that name and reads back only from it.

use std::fmt;
use std::str::FromStr;

/// One named check.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Debug)]
pub enum Check {
    /// TOKEN: tokens advance on takeover and are kept by renew and live re-acquire (for
    /// KubeLease: on `leaseTransitions` over the API server's accepted writes).
    Token,
    /// EXCL: at most one unexpired lease per session (without decision lines: no two owners'
    /// validity windows overlap, within the drift bound).
    Excl,
    /// EXPIRY: no lease ends early, other than by its holder's own release (for KubeLease, by
    /// observation: a takeover waits a TTL on the candidate's clock).
    Expiry,
    /// FENCE: fences strictly increase and stop lower-epoch writers.
    Fence,
    /// LEDGER: one CAS chain holding every acknowledged append once.
    Ledger,
    /// STOP: a replica stops using its lease once lost or past `valid_until`.
    Stop,
    /// LIVE: after faults heal, each session is written again within a bound.
    Live,
    /// SIGNAL: a target crate's own "I lead" signal holds only while its lease does, and
    /// never beside another leader's (docs/checks.md#signal).
    Signal,
    /// DEFINITE: an operation reported `fail` did not take effect (Jepsen's `:fail`): its
    /// record is not in the final ledger, the authority decided nothing in its favour, the API
    /// server accepted no write of it (docs/checks.md#definite).
    Definite,
    /// LIN-LEASE: the lease service's history against the timed lease model (for KubeLease:
    /// the Lease API calls against a CAS register keyed by `resourceVersion`).
    LinLease,
    /// LIN-LEDGER: the ledger's history against the CAS log model.
    LinLedger,
}

impl Check {
    /// Every check, in report order (the order of [`Ord`] too): the invariants, then the
    /// linearizability checks.
    pub const ALL: [Check; 11] = {
        let (invariants, linearizability) = (Check::INVARIANTS, Check::LINEARIZABILITY);
        let mut all = [Check::Token; 11];
        let mut i = 0;
        while i < all.len() {
            all[i] = if i < invariants.len() {
                invariants[i]
            } else {
                linearizability[i - invariants.len()]
            };
            i += 1;
        }
        all
    };

    /// The invariants (judged by `check::invariants`), in report order.
    pub const INVARIANTS: [Check; 9] = [
        Check::Token,
        Check::Excl,
        Check::Expiry,
        Check::Fence,
        Check::Ledger,
        Check::Stop,
        Check::Live,
        Check::Signal,
        Check::Definite,
    ];

    /// The linearizability checks, in report order.
    pub const LINEARIZABILITY: [Check; 2] = [Check::LinLease, Check::LinLedger];

    /// The check's name as docs/checks.md spells it (`TOKEN`, …, `LIN-LEASE`, `LIN-LEDGER`).
    pub fn name(self) -> &'static str {
        match self {
            Check::Token => "TOKEN",
            Check::Excl => "EXCL",
            Check::Expiry => "EXPIRY",
            Check::Fence => "FENCE",
            Check::Ledger => "LEDGER",
            Check::Stop => "STOP",
            Check::Live => "LIVE",
            Check::Signal => "SIGNAL",
            Check::Definite => "DEFINITE",
            Check::LinLease => "LIN-LEASE",
            Check::LinLedger => "LIN-LEDGER",
        }
    }

    /// What the check holds a run to, in one line (the rule of docs/checks.md, as
    /// each variant's doc comment says it), for a reviewer reading a counterexample.
    pub fn rule(self) -> &'static str {
        match self {
            Check::Token => "tokens advance on takeover and are kept by renew and live re-acquire",
            Check::Excl => "at most one unexpired lease per session",
            Check::Expiry => "no lease ends early, other than by its holder's own release",
            Check::Fence => "fences strictly increase and stop lower-epoch writers",
            Check::Ledger => "one CAS chain holding every acknowledged append once",
            Check::Stop => {
                "a replica stops using its lease once lost or past its validity deadline"
            }
            Check::Live => {
                "after faults heal, each contended session is written again within a bound"
            }
            Check::Signal => {
                "a crate's own \"I lead\" holds only while its lease does, beside no other leader"
            }
            Check::Definite => "an operation reported fail did not take effect",
            Check::LinLease => "the lease calls have a linearization against the timed lease model",
            Check::LinLedger => "the ledger calls have a linearization against the CAS log model",
        }
    }

    /// Whether a violation of this check is a liveness violation (exit 5), not a safety one.
    pub fn is_liveness(self) -> bool {
        self == Check::Live
    }

    /// Every name, comma-separated, in report order: for error messages.
    pub fn names() -> String {
        Check::list(&Check::ALL)
    }

    /// The names of `checks`, comma-separated (`TOKEN, LIN-LEASE`).
    pub fn list(checks: &[Check]) -> String {
        checks
            .iter()
            .map(|c| c.name())
            .collect::<Vec<_>>()
            .join(", ")
    }
}

impl fmt::Display for Check {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A name that is not a check's: [`Check::from_str`]'s error.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct UnknownCheck {
    /// The name given.
    pub name: String,
}

impl fmt::Display for UnknownCheck {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let UnknownCheck { name } = self;
        write!(
            f,
            "unknown check `{name}`; the checks are {}",
            Check::names()
        )
    }
}

impl std::error::Error for UnknownCheck {}

impl FromStr for Check {
    type Err = UnknownCheck;

    /// Reads a check from its exact [`Check::name`] (case matters).
    fn from_str(name: &str) -> Result<Self, Self::Err> {
        Check::ALL
            .into_iter()
            .find(|check| check.name() == name)
            .ok_or_else(|| UnknownCheck {
                name: name.to_owned(),
            })
    }
}

impl serde::Serialize for Check {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.name())
    }
}

impl<'de> serde::Deserialize<'de> for Check {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let name = <std::borrow::Cow<'de, str>>::deserialize(deserializer)?;
        name.parse().map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::Check;

    #[test]
    fn names_round_trip_in_report_order() {
        let names: Vec<&str> = Check::ALL.iter().map(|c| c.name()).collect();
        assert_eq!(
            names,
            [
                "TOKEN",
                "EXCL",
                "EXPIRY",
                "FENCE",
                "LEDGER",
                "STOP",
                "LIVE",
                "SIGNAL",
                "DEFINITE",
                "LIN-LEASE",
                "LIN-LEDGER"
            ]
        );
        for check in Check::ALL {
            assert_eq!(check.name().parse::<Check>(), Ok(check));
            assert_eq!(check.to_string(), check.name());
        }
        let mut sorted = Check::ALL;
        sorted.sort();
        assert_eq!(sorted, Check::ALL, "Ord is report order");
    }

    #[test]
    fn an_unknown_name_is_refused_with_the_list() {
        let error = "token".parse::<Check>().unwrap_err();
        assert_eq!(
            error.to_string(),
            "unknown check `token`; the checks are TOKEN, EXCL, EXPIRY, FENCE, LEDGER, STOP, \
             LIVE, SIGNAL, DEFINITE, LIN-LEASE, LIN-LEDGER"
        );
    }

    #[test]
    fn serde_uses_the_name() {
        assert_eq!(
            serde_json::to_string(&[Check::Excl, Check::LinLease]).unwrap(),
            r#"["EXCL","LIN-LEASE"]"#
        );
        let back: Vec<Check> = serde_json::from_str(r#"["LIN-LEDGER","STOP"]"#).unwrap();
        assert_eq!(back, [Check::LinLedger, Check::Stop]);
        let error = serde_json::from_str::<Check>(r#""NOPE""#).unwrap_err();
        assert!(
            error.to_string().contains("unknown check `NOPE`"),
            "{error}"
        );
    }
}
