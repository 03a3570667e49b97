//! Field case F8: unlinking the session's lock file on release lets a process waiting on the
//! old inode and one that creates a fresh file both hold "the" lock (docs/backends.md#flocklease).

use std::time::Duration;

use leasesim::lease::flock::driver::{Event, Line, Reply, Verb};
use leasesim::mutant::Mutant;

use crate::support::{Bound, Holder, granted, held};

/// F8, with every step ordered by the processes' own events, so no sleep decides anything:
///
/// 1. A (`--pause-at record-read`) acquires s1 (it pauses once inside the acquire: `go`) →
///    token 1.
/// 2. A releases: it pauses at record-read, holding the session lock on the lock file's inode
///    (call it I1).
/// 3. B (`--pause-at record-read`) acquires: it opens the lock file (I1) and finds it locked
///    → its `lock-busy` event (B now waits on I1).
/// 4. A `go`: A writes the released record (token 1 kept) and unlocks — under
///    `unlink-on-release` it first unlinks the lock file, so I1 is a deleted inode — and
///    replies.
/// 5. B gets the lock on I1 and pauses at record-read (it has read "free, token 1").
/// 6. C acquires. Correct: the path still names I1, which B holds → C's first line is its
///    `lock-busy` event. Mutant: the path is gone, C creates a fresh lock file (I2), locks it
///    at once, reads "free" and grants itself token 2 while B is inside its decision → C's
///    first line is its `ok` reply: two processes decided under "the" session lock at once.
/// 7. B `go`. Correct: B is granted token 2; C then gets I1, sees B's live hold → `held`
///    naming token 2. Mutant: B grants itself token 2 from its stale read as well (or fails
///    on the generation lock C took) — either way C's grant already broke the rule.
///
/// Right outcome: never two `ok` replies among B and C for one live hold, and C never
/// decides while B holds the session lock.
pub fn unlink_race_never_two_holders(mutant: Option<Mutant>) -> Result<(), String> {
    let bound = Bound::new(Duration::from_secs(30));
    let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
    let pause = ["--ttl", "30s", "--pause-at", "record-read"];
    let mut a = Holder::start(dir.path(), "A", mutant, &pause, &bound)?;
    let mut b = Holder::start(dir.path(), "B", mutant, &pause, &bound)?;
    let mut c = Holder::start(dir.path(), "C", mutant, &["--ttl", "30s"], &bound)?;
    // 1.
    a.send("acquire s1")?;
    a.paused_at("record-read", &bound)?;
    a.send("go")?;
    let first = granted(&a, &a.reply(&bound)?)?;
    // 2.
    a.send("release s1")?;
    a.paused_at("record-read", &bound)?;
    // 3.
    b.send("acquire s1")?;
    match b.event(&bound)? {
        Event::LockBusy { .. } => {}
        other => return Err(b.describe(&format!("expected lock-busy: {other:?}"))),
    }
    // 4.
    a.send("go")?;
    let released = a.reply(&bound)?;
    if !(released.reply == Verb::Release && released.ok) {
        return Err(a.describe(&format!("release: {released:?}")));
    }
    // 5.
    b.paused_at("record-read", &bound)?;
    // 6.
    c.send("acquire s1")?;
    let c_first = c.next(&bound)?;
    b.send("go")?;
    let b_reply = b.reply(&bound);
    if let Line::Reply(reply) = c_first {
        return Err(format!(
            "C's acquire was answered ({reply:?}) while B was inside its decision under the \
             session lock (B's reply after go: {b_reply:?}): two processes held the lock of s1 \
             at once — the lock file was unlinked under a waiter (F8)"
        ));
    }
    if !matches!(c_first, Line::Event(Event::LockBusy { .. })) {
        return Err(c.describe(&format!("expected lock-busy: {c_first:?}")));
    }
    // 7.
    let b_reply = b_reply?;
    let c_reply = c.reply(&bound)?;
    judge(first, (&b, &b_reply), (&c, &c_reply))
}

/// B must be granted the token after `first`, and C must be `held` naming B's token.
fn judge(first: u64, b: (&Holder, &Reply), c: (&Holder, &Reply)) -> Result<(), String> {
    if b.1.ok && c.1.ok {
        return Err(format!(
            "two holders of s1 at once: B {:?} and C {:?}",
            b.1, c.1
        ));
    }
    let token = granted(b.0, b.1)?;
    if token != first + 1 {
        return Err(b.0.describe(&format!("token {token} after {first}")));
    }
    let holder = held(c.0, c.1)?;
    if holder != Some(token) {
        return Err(c
            .0
            .describe(&format!("held names {holder:?}, B holds {token}")));
    }
    Ok(())
}

correct!(unlink_race_never_two_holders);
