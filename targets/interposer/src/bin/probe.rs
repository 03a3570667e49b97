//! A probe the interposer's tests run as a process of its own, under an LD_PRELOADed library
//! (`tests/interposer/forward.rs`): it installs a source that answers only on a thread that
//! asks for it, and prints what `SystemTime::now()` returns on the main thread (forwarded: the
//! next definition answers) and on a thread the source answers, as `<where> <secs> <nanos>`,
//! then the self-test's verdict on that thread (`self-test ok` or `self-test: <error>`).
//!
//! Built static (docs/targets.md#the-self-test), its self-test names the read that build misses.

use std::cell::Cell;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use leasesim_interposer::{ClockKind, Source, install};

/// The wall clock the source answers: 2023-11-14T22:13:20.123456789Z.
const WALL: Duration = Duration::new(1_700_000_000, 123_456_789);

thread_local! {
    static ANSWER: Cell<bool> = const { Cell::new(false) };
}

/// The monotonic clock the source answers: a day after boot.
const MONOTONIC: Duration = Duration::from_secs(86_400);

fn now(kind: ClockKind) -> Option<Duration> {
    ANSWER.get().then_some(match kind {
        ClockKind::Wall => WALL,
        ClockKind::Monotonic => MONOTONIC,
    })
}

fn fill_random(buf: &mut [u8]) -> bool {
    let answer = ANSWER.get();
    if answer {
        buf.fill(0x42);
    }
    answer
}

fn print_wall(place: &str) {
    let wall = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default();
    println!("{place} {} {}", wall.as_secs(), wall.subsec_nanos());
}

fn main() {
    if let Err(e) = install(Source { now, fill_random }) {
        eprintln!("probe: {e}");
        std::process::exit(3);
    }
    print_wall("forwarded");
    let answered = std::thread::spawn(|| {
        ANSWER.set(true);
        print_wall("answered");
        match leasesim_interposer::self_test() {
            Ok(()) => println!("self-test ok"),
            Err(e) => println!("self-test: {e}"),
        }
    });
    if answered.join().is_err() {
        std::process::exit(3);
    }
}
