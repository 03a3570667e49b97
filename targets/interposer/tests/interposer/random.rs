//! On a thread the source answers, every randomness reader unmodified code uses draws the
//! source's stream.

use std::collections::hash_map::{DefaultHasher, RandomState};
use std::hash::{BuildHasher, Hash, Hasher};
use std::time::Instant;

use crate::source::{Mode, SEED, answering, errno, fresh_thread, seed_stream};

#[test]
fn getrandom_fill_draws_the_sources_stream() {
    answering(Mode::Answer, || {
        let mut drawn = [0u8; 20];
        getrandom::fill(&mut drawn).expect("the source's getrandom");
        assert_eq!(drawn, seed_stream());
    });
}

#[test]
fn getentropy_draws_the_sources_stream() {
    answering(Mode::Answer, || {
        let mut drawn = [0u8; 16];
        // SAFETY: a valid buffer.
        assert_eq!(
            unsafe { libc::getentropy(drawn.as_mut_ptr().cast(), 16) },
            0
        );
        assert_eq!(drawn, seed_stream());
    });
}

#[test]
fn requests_libc_refuses_are_refused_by_the_real_function() {
    answering(Mode::Answer, || {
        let mut buf = [0u8; 300];
        // SAFETY: valid buffers.
        let unknown_flag = unsafe { libc::getrandom(buf.as_mut_ptr().cast(), 8, 0x4000) };
        assert_eq!((unknown_flag, errno()), (-1, libc::EINVAL));
        // SAFETY: a valid buffer.
        let too_long = unsafe { libc::getentropy(buf.as_mut_ptr().cast(), 300) };
        assert_eq!((too_long, errno()), (-1, libc::EIO));
    });
}

fn first_rand_u64() -> u64 {
    use rand::RngExt;
    rand::rng().random::<u64>()
}

#[test]
fn rand_thread_rng_is_seeded_from_the_source() {
    let first = fresh_thread(SEED, first_rand_u64);
    assert_eq!(fresh_thread(SEED, first_rand_u64), first);
    assert_ne!(fresh_thread(SEED + 1, first_rand_u64), first);
}

fn hash_of_42() -> u64 {
    RandomState::new().hash_one(42u64)
}

#[test]
fn std_random_state_keys_come_from_the_source() {
    let first = fresh_thread(SEED, hash_of_42);
    assert_eq!(fresh_thread(SEED, hash_of_42), first);
    assert_ne!(fresh_thread(SEED + 1, hash_of_42), first);
}

/// fastrand 2.5's global generator is seeded with SipHash (fixed keys) over `Instant::now()`
/// and the thread's id (`global_rng.rs`, `random_seed`): no getrandom, so it is the source's
/// once the monotonic clock is.
#[test]
fn fastrand_is_seeded_from_the_sources_monotonic_clock() {
    fresh_thread(SEED, || {
        let drawn = fastrand::u64(..);
        let mut seed = DefaultHasher::new();
        Instant::now().hash(&mut seed);
        std::thread::current().id().hash(&mut seed);
        assert_eq!(drawn, fastrand::Rng::with_seed(seed.finish()).u64(..));
    });
}
