//! A holder stopped (SIGSTOP) past its TTL: a stopped process keeps its generation lock, so
//! nobody takes over before the TTL; after it, the holder resumes to find itself fenced.

use std::time::Duration;

use leasesim::lease::flock::driver::Verb;
use leasesim::mutant::Mutant;
use rustix::process::Signal;

use crate::support::{Bound, Holder, granted, held, sleep, two_holders};

/// The TTL of these tests, and a wait that outlasts it.
const TTL: &str = "1s";
const PAST_TTL: Duration = Duration::from_millis(1_300);

/// A acquires s1 (TTL 1 s) and is stopped; B polls its acquire (every 50 ms, within the
/// test's bound) until it is `ok` — `held` before, as a stopped holder still holds its
/// generation lock — with A's token + 1. A is continued: its renew is `held` naming B's token.
#[test]
fn suspended_holder_resumes_fenced_after_a_takeover() {
    let bound = Bound::new(Duration::from_secs(20));
    let (_dir, mut a, mut b) = two_holders(None, &["--ttl", TTL], &bound).unwrap();
    let token = a.acquire_ok("s1", &bound).unwrap();
    a.signal(Signal::STOP).unwrap();
    let taken = loop {
        let reply = b.call("acquire s1", Verb::Acquire, &bound).unwrap();
        if reply.ok {
            break granted(&b, &reply).unwrap();
        }
        assert_eq!(held(&b, &reply).unwrap(), Some(token), "{reply:?}");
        sleep(Duration::from_millis(50));
    };
    assert_eq!(taken, token + 1);
    a.signal(Signal::CONT).unwrap();
    let renewed = a.call("renew s1", Verb::Renew, &bound).unwrap();
    assert_eq!(held(&a, &renewed).unwrap(), Some(taken), "{renewed:?}");
}

/// A acquires s1 (TTL 1 s), is stopped for longer than the TTL while nobody else asks, and is
/// continued: its renew is `held` all the same (expiry is judged on `CLOCK_BOOTTIME`, which
/// ran on while A was stopped). Under `renew-without-expiry-check` the renew succeeds: a
/// second witness of that mutant beside its conformance rule.
pub fn suspended_holder_nobody_took_over_renews_held(mutant: Option<Mutant>) -> Result<(), String> {
    let bound = Bound::new(Duration::from_secs(20));
    let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
    let mut a = Holder::start(dir.path(), "A", mutant, &["--ttl", TTL], &bound)?;
    let token = a.acquire_ok("s1", &bound)?;
    a.signal(Signal::STOP)?;
    sleep(PAST_TTL);
    a.signal(Signal::CONT)?;
    let renewed = a.call("renew s1", Verb::Renew, &bound)?;
    if renewed.ok {
        return Err(format!(
            "A renewed token {token} after being stopped past its TTL: {renewed:?}"
        ));
    }
    held(&a, &renewed).map(|_| ())
}

correct!(suspended_holder_nobody_took_over_renews_held);

/// A stopped inside its decision (paused at record-read, holding the session lock): B's
/// acquire, with a lock wait of 300 ms, waits (`lock-busy`) and then fails `unavailable`
/// naming the session's lock file — a transient error, not `held`, since nobody holds the
/// session yet. Once A goes on and is granted, B's retry is `held` naming A's token.
#[test]
fn holder_stopped_inside_a_decision_makes_others_unavailable_not_held() {
    use leasesim::lease::flock::driver::{Event, Failure};
    let bound = Bound::new(Duration::from_secs(20));
    let dir = tempfile::tempdir().unwrap();
    let pause = ["--ttl", "30s", "--pause-at", "record-read"];
    let mut a = Holder::start(dir.path(), "A", None, &pause, &bound).unwrap();
    let short = ["--ttl", "30s", "--lock-wait", "300ms"];
    let mut b = Holder::start(dir.path(), "B", None, &short, &bound).unwrap();
    a.send("acquire s1").unwrap();
    a.paused_at("record-read", &bound).unwrap();
    b.send("acquire s1").unwrap();
    assert!(matches!(b.event(&bound).unwrap(), Event::LockBusy { .. }));
    let reply = b.reply(&bound).unwrap();
    assert_eq!(reply.error, Some(Failure::Unavailable), "{reply:?}");
    let reason = reply.reason.unwrap_or_default();
    assert!(reason.contains(".lock"), "names the lock file: {reason}");
    a.send("go").unwrap();
    let token = granted(&a, &a.reply(&bound).unwrap()).unwrap();
    let reply = b.call("acquire s1", Verb::Acquire, &bound).unwrap();
    assert_eq!(held(&b, &reply).unwrap(), Some(token), "{reply:?}");
}
