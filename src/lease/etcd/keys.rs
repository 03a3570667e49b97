//! Where `EtcdLease` keeps a session in etcd, and what the holder key says.
//!
//! Two keys per session, both under [`PREFIX`]:
//! - `…/sessions/{session}/holder`: the live hold, put with the holder's etcd lease (so it
//!   goes when that lease expires or is revoked); its value is a [`Holder`] in JSON.
//! - `…/sessions/{session}/token`: the token counter, a decimal `u64`, never attached to a
//!   lease, so it survives the holder key and only grows.
//!
//! Both names end in a fixed component after the session id, so two sessions never share a
//! key even when ids contain `/`.

use serde::{Deserialize, Serialize};

use crate::lease::{Owner, SessionId};

/// The prefix of every key `EtcdLease` writes.
pub const PREFIX: &str = "leasesim/sessions/";

/// The holder key of `session`.
pub fn holder_key(session: &SessionId) -> String {
    format!("{PREFIX}{session}/holder")
}

/// The token counter key of `session`.
pub fn token_key(session: &SessionId) -> String {
    format!("{PREFIX}{session}/token")
}

/// The holder key's value: who holds the session and with which token.
#[derive(Clone, PartialEq, Eq, Debug, Serialize, Deserialize)]
pub struct Holder {
    /// The owner's replica name.
    pub replica: String,
    /// The owner's incarnation.
    pub incarnation: u64,
    /// The fencing token of this hold (the counter's value when it was granted).
    pub token: u64,
}

impl Holder {
    /// `owner` holding with `token`.
    pub fn new(owner: &Owner, token: u64) -> Self {
        Holder {
            replica: owner.replica.clone(),
            incarnation: owner.incarnation,
            token,
        }
    }

    /// Whether `owner` is the holder.
    pub fn is(&self, owner: &Owner) -> bool {
        self.replica == owner.replica && self.incarnation == owner.incarnation
    }

    /// The JSON value put at the holder key.
    pub fn encode(&self) -> Vec<u8> {
        serde_json::to_vec(self).expect("a struct of strings and integers serialises")
    }

    /// Reads a holder key's value; `Err` names what is wrong with it.
    pub fn decode(value: &[u8]) -> Result<Self, String> {
        serde_json::from_slice(value).map_err(|e| {
            format!(
                "not a holder record written by leasesim ({e}): {:?}",
                String::from_utf8_lossy(value)
            )
        })
    }
}

/// Reads the token counter's value; `Err` names what is wrong with it.
pub fn decode_token(value: &[u8]) -> Result<u64, String> {
    std::str::from_utf8(value)
        .ok()
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| {
            format!(
                "the token counter is not a decimal u64: {:?}",
                String::from_utf8_lossy(value)
            )
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_holder_round_trips_through_its_value() {
        let holder = Holder::new(&Owner::new("replica-1", 3), 7);
        assert_eq!(Holder::decode(&holder.encode()), Ok(holder));
    }

    #[test]
    fn a_foreign_holder_value_is_an_error_naming_it() {
        let err = Holder::decode(b"someone else").unwrap_err();
        assert!(err.contains("someone else"), "{err}");
    }

    #[test]
    fn sessions_ending_like_a_key_component_get_keys_of_their_own() {
        let a = SessionId::new("a").unwrap();
        let a_token = SessionId::new("a/token").unwrap();
        assert_ne!(holder_key(&a_token), token_key(&a));
        assert_ne!(token_key(&a_token), holder_key(&a));
        assert_eq!(holder_key(&a), "leasesim/sessions/a/holder");
    }

    #[test]
    fn a_token_counter_that_is_not_a_number_is_an_error() {
        assert_eq!(decode_token(b"41"), Ok(41));
        assert!(decode_token(b"-1").is_err());
    }
}
