//! Many processes racing for one session: the session lock serialises their decisions, so
//! exactly one wins and the others see its live hold.

use std::time::Duration;

use leasesim::lease::flock::driver::Verb;

use crate::support::{Bound, Holder, ensure, granted, held};

/// How many processes race.
const RACERS: usize = 16;

/// 16 processes started first, then `acquire s1` sent to all of them at once: exactly one
/// `ok`, with token 1; the 15 others `held`, naming token 1.
#[test]
fn sixteen_processes_racing_for_one_session_make_one_holder() {
    let bound = Bound::new(Duration::from_secs(40));
    let dir = tempfile::tempdir().unwrap();
    let mut racers: Vec<Holder> = (0..RACERS)
        .map(|i| {
            let owner = format!("racer-{i}");
            Holder::start(dir.path(), &owner, None, &["--ttl", "30s"], &bound).unwrap()
        })
        .collect();
    for racer in &mut racers {
        racer.send("acquire s1").unwrap();
    }
    let mut winners = Vec::new();
    for racer in &racers {
        let reply = racer.reply(&bound).unwrap();
        assert_eq!(reply.reply, Verb::Acquire, "{reply:?}");
        if reply.ok {
            winners.push((racer.name.clone(), granted(racer, &reply).unwrap()));
        } else {
            assert_eq!(held(racer, &reply).unwrap(), Some(1), "{reply:?}");
        }
    }
    ensure(winners.len() == 1, || format!("winners: {winners:?}")).unwrap();
    assert_eq!(winners[0].1, 1, "the first holder's token: {winners:?}");
}
