//! Versioned JSON files (schedules, scripts): one way to refuse a schema version this build
//! does not read, and to read and write such a file.

use serde::Serialize;
use serde::de::DeserializeOwned;

/// `Ok` when `found` is the version this leasesim reads (`reads`), else the message naming
/// both for a `kind` file (`schedule`, `script`).
///
/// # Errors
/// `"<kind> schema version <found> is not supported; this leasesim reads version <reads>"`.
pub(crate) fn check(kind: &str, found: u32, reads: u32) -> Result<(), String> {
    if found == reads {
        return Ok(());
    }
    Err(format!(
        "{kind} schema version {found} is not supported; this leasesim reads version {reads}"
    ))
}

/// Parses a `kind` file's text whose schema version (`version` of the value) must be `reads`.
///
/// # Errors
/// A message naming the line and column of malformed JSON, an unknown variant or field, or
/// [`check`]'s for a wrong version.
pub(crate) fn from_json<T: DeserializeOwned>(
    text: &str,
    kind: &str,
    reads: u32,
    version: impl FnOnce(&T) -> u32,
) -> Result<T, String> {
    let value: T = serde_json::from_str(text).map_err(|e| e.to_string())?;
    check(kind, version(&value), reads)?;
    Ok(value)
}

/// `value` as pretty JSON (a `kind` file).
pub(crate) fn to_json(value: &impl Serialize, kind: &str) -> String {
    serde_json::to_string_pretty(value)
        .unwrap_or_else(|e| unreachable!("a {kind} always serialises: {e}"))
}
