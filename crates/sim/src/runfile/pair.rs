//! `[least, most]` pairs read from scenario and run files: exactly two elements. A tuple
//! read from TOML silently drops extra elements (bad-input probe, D15); these refuse them,
//! as `[1]` is refused.

use serde::de::{Deserialize, Deserializer, Error};

/// A pair of exactly two elements, `[least, most]`.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct Pair<T>(pub T, pub T);

impl<T> Pair<T> {
    /// As a tuple.
    pub fn tuple(self) -> (T, T) {
        (self.0, self.1)
    }
}

impl<'de, T: Deserialize<'de>> Deserialize<'de> for Pair<T> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let items = Vec::<T>::deserialize(deserializer)?;
        let length = items.len();
        match <[T; 2]>::try_from(items) {
            Ok([least, most]) => Ok(Pair(least, most)),
            Err(_) => Err(D::Error::invalid_length(
                length,
                &"a pair of exactly two elements [least, most]",
            )),
        }
    }
}

/// Reads a pair (`#[serde(deserialize_with = "exact")]`).
///
/// # Errors
/// Anything but a sequence of exactly two `T`s.
pub fn exact<'de, D: Deserializer<'de>, T: Deserialize<'de>>(
    deserializer: D,
) -> Result<(T, T), D::Error> {
    Pair::deserialize(deserializer).map(|Pair(least, most)| (least, most))
}

/// Reads an optional pair (`#[serde(default, deserialize_with = "exact_option")]`).
///
/// # Errors
/// As [`exact`].
pub fn exact_option<'de, D: Deserializer<'de>, T: Deserialize<'de>>(
    deserializer: D,
) -> Result<Option<(T, T)>, D::Error> {
    Option::<Pair<T>>::deserialize(deserializer)
        .map(|pair| pair.map(|Pair(least, most)| (least, most)))
}
