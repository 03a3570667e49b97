//! How the benches read their settings from the environment: one value, or a comma-separated
//! list, each read by a parser that says what it wants; a bad value ends the bench with exit 2
//! (bad input), naming the variable, the value and the bench's file. Each bench includes this
//! file with `#[path]`; the bench's name is its crate's (`CARGO_CRATE_NAME`).

/// The bench's name, as in `benches/<name>.rs`.
const BENCH: &str = env!("CARGO_CRATE_NAME");

/// The environment variable `name` (else `default`) read by `parse`.
pub fn one<T>(name: &str, default: &str, parse: fn(&str) -> Result<T, &'static str>) -> T {
    let text = std::env::var(name).unwrap_or_else(|_| default.to_owned());
    parse(text.trim()).unwrap_or_else(|want| refuse(name, &text, want))
}

/// The environment variable `name` (else `default`), comma-separated, each item read by
/// `parse`; at least one item.
pub fn list<T>(name: &str, default: &str, parse: fn(&str) -> Result<T, &'static str>) -> Vec<T> {
    let text = std::env::var(name).unwrap_or_else(|_| default.to_owned());
    let items: Vec<T> = text
        .split(',')
        .map(str::trim)
        .filter(|item| !item.is_empty())
        .map(|item| parse(item).unwrap_or_else(|want| refuse(name, item, want)))
        .collect();
    if items.is_empty() {
        refuse(name, &text, "at least one item");
    }
    items
}

/// Ends the bench: `value` of `name` is not `want` (exit 2, bad input).
pub fn refuse(name: &str, value: &str, want: &str) -> ! {
    eprintln!("{BENCH} bench: {name}: `{value}` is not {want} (see benches/{BENCH}.rs)");
    std::process::exit(2);
}

/// A seed range `A..B`, A < B.
pub fn seed_range(text: &str) -> Result<(u64, u64), &'static str> {
    const WANT: &str = "`A..B` with A < B";
    let (a, b) = text.split_once("..").ok_or(WANT)?;
    let (a, b): (u64, u64) = (a.parse().map_err(|_| WANT)?, b.parse().map_err(|_| WANT)?);
    if a >= b {
        return Err(WANT);
    }
    Ok((a, b))
}
