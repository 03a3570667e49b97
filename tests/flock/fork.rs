//! Forked children: a child shares its parent's open file descriptions (`O_CLOEXEC` acts only
//! at exec), so only the process that acquired may unlock; and a child that lingers must not
//! keep a hold its parent released.

use std::time::Duration;

use leasesim::lease::flock::driver::Verb;
use leasesim::mutant::Mutant;

use crate::support::{Bound, alive, granted, held, two_holders};

/// A acquires s1, then `fork exit s1`: the child releases the inherited lease value, drops
/// every file it inherited and exits 0. A's hold must be untouched: B's acquire is `held`
/// naming A's token and A's renew is `ok` with the same token. Under
/// `unlock-from-any-process` the child's release unlocks the generation lock (the open file
/// description is the parent's too) and clears the record, so B wins.
pub fn forked_child_that_exits_keeps_parents_hold(mutant: Option<Mutant>) -> Result<(), String> {
    let bound = Bound::new(Duration::from_secs(20));
    let (_dir, mut a, mut b) = two_holders(mutant, &["--ttl", "30s"], &bound)?;
    let token = a.acquire_ok("s1", &bound)?;
    let forked = a.call("fork exit s1", Verb::ForkExit, &bound)?;
    if !(forked.ok && forked.exit_code == Some(0)) {
        return Err(a.describe(&format!("the child did not exit 0: {forked:?}")));
    }
    let reply = b.call("acquire s1", Verb::Acquire, &bound)?;
    if reply.ok {
        return Err(format!(
            "B was granted s1 ({reply:?}) while A still holds token {token}: A's forked child \
             released its parent's hold"
        ));
    }
    let holder = held(&b, &reply)?;
    if holder != Some(token) {
        return Err(b.describe(&format!("held names {holder:?}, A holds {token}")));
    }
    let renewed = a.call("renew s1", Verb::Renew, &bound)?;
    let renewed = granted(&a, &renewed)?;
    if renewed != token {
        return Err(a.describe(&format!("renew moved the token {token} → {renewed}")));
    }
    Ok(())
}

correct!(forked_child_that_exits_keeps_parents_hold);

/// A acquires s1, forks a child that lingers (it keeps every inherited descriptor, the
/// generation lock's included), then releases: B's acquire is `ok` with the next token while
/// the child is still alive with its copies open.
#[test]
fn lingering_child_does_not_keep_a_released_hold() {
    let bound = Bound::new(Duration::from_secs(20));
    let (_dir, mut a, mut b) = two_holders(None, &["--ttl", "30s"], &bound).unwrap();
    let token = a.acquire_ok("s1", &bound).unwrap();
    let forked = a.call("fork linger", Verb::ForkLinger, &bound).unwrap();
    let child = forked.child_pid.expect("fork linger names its child");
    a.adopt(child);
    let released = a.call("release s1", Verb::Release, &bound).unwrap();
    assert!(released.ok, "{released:?}");
    let reply = b.call("acquire s1", Verb::Acquire, &bound).unwrap();
    assert_eq!(granted(&b, &reply).unwrap(), token + 1, "{reply:?}");
    assert!(alive(child), "the lingering child {child} died early");
}
