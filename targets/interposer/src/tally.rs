//! What the hooks saw on this thread, for the self-test: how many reads of each kind reached
//! a hook and how many the source answered, and the last answers (thread-local cells: no
//! allocation, no lock, no destructor on the hook path).

use std::cell::Cell;
use std::time::Duration;

use crate::source::ClockKind;

/// The kinds of read the hooks count.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Channel {
    /// `clock_gettime` of a wall clock, `gettimeofday`.
    Wall,
    /// `clock_gettime` of a monotonic clock.
    Monotonic,
    /// `getrandom`, `getentropy`.
    Random,
}

impl From<ClockKind> for Channel {
    fn from(kind: ClockKind) -> Channel {
        match kind {
            ClockKind::Wall => Channel::Wall,
            ClockKind::Monotonic => Channel::Monotonic,
        }
    }
}

/// Reads of one channel on this thread so far.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Counts {
    /// Reads that reached a hook.
    pub reached: u64,
    /// Of those, reads the source answered.
    pub answered: u64,
}

thread_local! {
    static COUNTS: [Cell<Counts>; 3] = const {
        [const { Cell::new(Counts { reached: 0, answered: 0 }) }; 3]
    };
    static LAST_WALL: Cell<Duration> = const { Cell::new(Duration::ZERO) };
    static LAST_RANDOM: Cell<u64> = const { Cell::new(0) };
}

fn bump(channel: Channel, change: impl FnOnce(&mut Counts)) {
    let _ = COUNTS.try_with(|counts| {
        let cell = &counts[channel as usize];
        let mut value = cell.get();
        change(&mut value);
        cell.set(value);
    });
}

/// A read of `channel` reached a hook.
pub(crate) fn reached(channel: Channel) {
    bump(channel, |c| c.reached = c.reached.wrapping_add(1));
}

/// The source answered a read of `channel`.
pub(crate) fn answered(channel: Channel) {
    bump(channel, |c| c.answered = c.answered.wrapping_add(1));
}

/// The source answered a wall-clock read with `since_epoch`.
pub(crate) fn answered_wall(since_epoch: Duration) {
    answered(Channel::Wall);
    let _ = LAST_WALL.try_with(|last| last.set(since_epoch));
}

/// The source answered a random read with `bytes`.
pub(crate) fn answered_random(bytes: &[u8]) {
    answered(Channel::Random);
    let _ = LAST_RANDOM.try_with(|last| last.set(digest(bytes)));
}

/// This thread's counts for `channel`.
pub(crate) fn counts(channel: Channel) -> Counts {
    COUNTS
        .try_with(|counts| counts[channel as usize].get())
        .unwrap_or_default()
}

/// The last wall-clock answer on this thread.
pub(crate) fn last_wall() -> Duration {
    LAST_WALL.try_with(Cell::get).unwrap_or_default()
}

/// The digest of the last random answer on this thread.
pub(crate) fn last_random() -> u64 {
    LAST_RANDOM.try_with(Cell::get).unwrap_or_default()
}

/// FNV-1a over `bytes`: enough to tell which bytes the hook handed out.
pub(crate) fn digest(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |hash, byte| {
        (hash ^ u64::from(*byte)).wrapping_mul(0x0100_0000_01b3)
    })
}
