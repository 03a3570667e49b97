//! What the engine's benches share: their settings, read from the environment.

/// The environment variable `name` as comma-separated whole numbers of at least 1 (`default`
/// when unset): every setting is a count or a duration; a value that is not one ends the bench
/// with exit code 2 and a message naming it.
pub fn env_list(name: &str, default: &str) -> Vec<u64> {
    let text = std::env::var(name).unwrap_or_else(|_| default.to_owned());
    text.split(',')
        .map(|n| match n.trim().parse::<u64>() {
            Ok(0) => refuse(name, n, "zero"),
            Ok(n) => n,
            Err(e) => refuse(name, n, &e.to_string()),
        })
        .collect()
}

/// Whether the switch `name` is on: set to anything but empty or `0`.
#[allow(dead_code, reason = "not every bench has a switch")]
pub fn env_flag(name: &str) -> bool {
    std::env::var(name).is_ok_and(|v| !v.is_empty() && v != "0")
}

/// The environment variable `name` as one signed whole number (`default` when unset), for a
/// setting that may be zero or negative (a clock drift in ppm); a value that is not one ends
/// the bench with exit code 2 and a message naming it.
#[allow(dead_code, reason = "not every bench has a signed setting")]
pub fn env_int(name: &str, default: i64) -> i64 {
    match std::env::var(name) {
        Err(_) => default,
        Ok(text) => text
            .trim()
            .parse::<i64>()
            .unwrap_or_else(|e| refuse(name, &text, &e.to_string())),
    }
}

fn refuse(name: &str, value: &str, why: &str) -> ! {
    eprintln!("{name}: `{value}` is not a whole number of at least 1 ({why})");
    std::process::exit(2);
}
