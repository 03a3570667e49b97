//! SIGKILL of the holder: its generation lock dies with it, so the next candidate takes over
//! at once with the next token instead of waiting for the TTL.

use std::time::Duration;

use leasesim::lease::flock::driver::Verb;

use crate::support::{Bound, ensure, granted, two_holders};

/// A holds s1 with a 30 s TTL and is SIGKILLed; B's very first acquire is `ok` with A's
/// token + 1. The test's bound (15 s) is far below the TTL, so waiting for the TTL could not
/// pass; how long the takeover takes is measured in `benches/flock.rs`, not asserted here.
#[test]
fn sigkilled_holder_is_taken_over_at_once_with_the_next_token() {
    let bound = Bound::new(Duration::from_secs(15));
    let (_dir, mut a, mut b) = two_holders(None, &["--ttl", "30s"], &bound).unwrap();
    let reply = a.call("acquire s1", Verb::Acquire, &bound).unwrap();
    let token = granted(&a, &reply).unwrap();
    let status = a.kill().unwrap();
    ensure(status.code().is_none(), || {
        format!("A was not killed: {status}")
    })
    .unwrap();
    let reply = b.call("acquire s1", Verb::Acquire, &bound).unwrap();
    assert_eq!(granted(&b, &reply).unwrap(), token + 1, "{reply:?}");
}
