//! Times in messages for people (`leasesim_history::time`, shared with the checkers), and
//! durations people write on the command line (`10s`, `1m30s`): [`parse_duration`], one parser
//! for every flag of `run`, `campaign`, `live` and `serve`.

pub use leasesim_history::time::*;

/// Parses a duration such as `10s`, `500ms` or `1m30s`.
///
/// # Errors
/// A message naming the bad value and the expected form.
pub fn parse_duration(text: &str) -> Result<std::time::Duration, String> {
    let duration = humantime::parse_duration(text).map_err(|e| {
        format!("`{text}` is not a duration ({e}); write it like 10s, 500ms or 1m30s")
    })?;
    if duration.is_zero() {
        return Err(format!("`{text}`: the duration must be positive"));
    }
    Ok(duration)
}
