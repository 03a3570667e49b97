//! What the engine's benches share: their settings, read from the environment.

/// The environment variable `name` as comma-separated whole numbers (`default` when unset);
/// a value that is not one ends the bench with exit code 2 and a message naming it.
pub fn env_list(name: &str, default: &str) -> Vec<u64> {
    let text = std::env::var(name).unwrap_or_else(|_| default.to_owned());
    text.split(',')
        .map(|n| match n.trim().parse() {
            Ok(n) => n,
            Err(e) => {
                eprintln!("{name}: `{n}` is not a whole number ({e})");
                std::process::exit(2);
            }
        })
        .collect()
}
