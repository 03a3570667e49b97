//! The session lease as a sequential object whose expiry is judged on the authority's clock.
//!
//! Semantics: the contract of docs/contracts.md#lease and docs/checks.md#lin-lease
//! (linearizability of the lease service history with a timed model), as the conformance suite
//! pins it (`crates/conformance/src/lib.rs`), per session:
//!
//! - **acquire(owner)** grants when the session is free, expired (`now >= expiry`) or released:
//!   a *takeover*, whose token exceeds every token granted before (tokens may skip: a grant
//!   cut off by an authority crash may have raised the durable high-water mark); or when the
//!   same owner holds it live: the token is kept. It answers `Held { holder_token }` when another
//!   owner's lease is live.
//! - **renew(owner, token)** grants (same token, new expiry) when that exact lease is the live
//!   one; otherwise `Held` naming the live holder's token, or `null` when no lease is live.
//! - **release(owner, token)** always answers `Released`; it frees the session only when that
//!   exact lease is the current record (live or not).
//!
//! # Time
//!
//! [`Model::step`] has no time argument, so each operation carries its own window on the
//! authority's clock ([`AuthorityWindow`]): the true-time window `[invoke, complete]` placed on
//! the `lease` host's monotonic clock through the history's clock segments, its boots laid end
//! to end (see [`super::check_lease_history`]). An operation is accepted if **some instant**
//! inside its window makes its response legal: a `Held` answer needs the holder's lease to be
//! possibly unexpired at some instant of the window, a `Held { null }` renew answer needs it
//! possibly expired. A grant carries its own instant: the authority sets
//! `expiry = now + ttl`, so it decided at `expiry − ttl` (µs truncation allows one µs less),
//! and that instant must lie in the window. Each operation is judged on its own window, not
//! forced to be later than the operations placed before it, which keeps the model sound
//! (never rejects a legal history) at some loss of precision.
//!
//! Expiries are kept as an interval `[from, to]` (equal for a known grant): an unknown-outcome
//! renew of the current lease may have pushed it to any later instant. Expiry comparisons allow
//! equality both ways (the µs readings are truncated nanoseconds, so `now == expiry` in µs may
//! be either side). An unknown-outcome acquire leaves the state [`Holder::Unknown`], in which every response is accepted until a grant pins it again;
//! the token high-water mark stays a lower bound throughout.

mod rules;

use super::Model;
use leasesim_history::Process;
use leasesim_history::time::seconds_us;

/// A call on one session's lease, with its window on the authority's clock.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct LeaseInput {
    /// The session; the partition key.
    pub session: String,
    /// The owner presenting the call (acquire's owner, or the lease value's owner), as an index
    /// into [`TimedLease::owners`].
    pub owner: u32,
    /// What was called.
    pub call: LeaseCall,
    /// When it can have taken effect, on the authority's clock.
    pub window: AuthorityWindow,
}

/// A lease call.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum LeaseCall {
    /// `SessionLease::acquire(session, owner)`.
    Acquire,
    /// `SessionLease::renew` of a lease value with this token.
    Renew {
        /// The token presented.
        token: u64,
    },
    /// `SessionLease::release` of a lease value with this token.
    Release {
        /// The token presented.
        token: u64,
    },
}

/// An operation's window on the authority's monotonic clock, µs, both ends included, on the
/// timeline of [`super::check_lease_history`] (the authority's boots laid end to end).
/// `to_us` is `u64::MAX` when the operation may take effect at any later time.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct AuthorityWindow {
    /// The earliest instant, µs.
    pub from_us: u64,
    /// The latest instant, µs.
    pub to_us: u64,
}

/// A completed lease call's response.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum LeaseOutput {
    /// Acquire or renew granted.
    Granted {
        /// The fencing token.
        token: u64,
        /// The expiry on the authority's clock (same timeline as the windows), µs.
        expiry_us: u64,
        /// The TTL granted, µs.
        ttl_us: u64,
    },
    /// Refused: another lease is live (`Some(its token)`), or for a renew, no lease is live
    /// (`None`).
    Held {
        /// The live holder's token, if any.
        holder_token: Option<u64>,
    },
    /// Release answered.
    Released,
}

/// A session's lease state.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct LeaseState {
    /// The highest token known granted (a lower bound on the authority's high-water mark).
    pub high_water: u64,
    /// The current record.
    pub holder: Holder,
}

/// The session's current lease record.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Holder {
    /// No record: never granted, or released.
    Free,
    /// A record, live until its expiry (which may have passed).
    Held {
        /// Index of the owner in [`TimedLease::owners`].
        owner: u32,
        /// Its token.
        token: u64,
        /// The earliest its expiry can be, µs on the authority's clock.
        expiry_from_us: u64,
        /// The latest its expiry can be, µs (`u64::MAX`: unbounded).
        expiry_to_us: u64,
    },
    /// An unknown-outcome call may have changed the record in ways one state cannot say.
    Unknown,
}

/// The timed lease model, partitioned per session.
#[derive(Clone, Debug, Default)]
pub struct TimedLease {
    /// The owners the inputs refer to by index (for explanations).
    pub owners: Vec<Process>,
}

impl TimedLease {
    /// A model whose inputs name owners by their index in `owners`.
    pub fn new(owners: Vec<Process>) -> Self {
        TimedLease { owners }
    }

    /// Owner `owner` as every output names it (`replica-1`, `replica-1#2` after restarts).
    pub(super) fn who(&self, owner: u32) -> String {
        match self.owners.get(owner as usize) {
            Some(p) => p.to_string(),
            None => format!("owner {owner}"),
        }
    }
}

/// The instants a grant can have been decided at: `expiry − ttl`, or one µs earlier (both are
/// truncated from nanoseconds). `None` if that does not meet the window.
fn grant_instants(window: &AuthorityWindow, expiry_us: u64, ttl_us: u64) -> Option<(u64, u64)> {
    let at = expiry_us.checked_sub(ttl_us)?;
    let from = at.saturating_sub(1);
    (from <= window.to_us && at >= window.from_us).then_some((from, at))
}

/// Whether the record may be live at some instant of `[from, to]`.
fn may_be_live(expiry_to_us: u64, from: u64) -> bool {
    from <= expiry_to_us
}

/// Whether the record may be expired at some instant of `[from, to]`.
fn may_be_expired(expiry_from_us: u64, to: u64) -> bool {
    to >= expiry_from_us
}

impl Model for TimedLease {
    type State = LeaseState;
    type Input = LeaseInput;
    type Output = LeaseOutput;
    type Key = String;

    fn init(&self) -> LeaseState {
        LeaseState {
            high_water: 0,
            holder: Holder::Free,
        }
    }

    fn step(
        &self,
        state: &LeaseState,
        input: &LeaseInput,
        output: Option<&LeaseOutput>,
    ) -> Option<LeaseState> {
        debug_assert!(state.is_consistent(), "a reachable state: {state:?}");
        let me = input.owner;
        let w = &input.window;
        let Some(output) = output else {
            return Some(unknown_outcome(state, input));
        };
        match (input.call, *output) {
            (
                call,
                LeaseOutput::Granted {
                    token,
                    expiry_us,
                    ttl_us,
                },
            ) => {
                let instants = grant_instants(w, expiry_us, ttl_us)?;
                match call {
                    LeaseCall::Acquire => acquire_granted(state, me, token, expiry_us, instants),
                    LeaseCall::Renew { token: presented } => {
                        renew_granted(state, (me, presented), token, expiry_us, instants)
                    }
                    LeaseCall::Release { .. } => None,
                }
            }
            (LeaseCall::Acquire, LeaseOutput::Held { holder_token }) => {
                acquire_refused(state, me, w, holder_token)
            }
            (LeaseCall::Renew { token: presented }, LeaseOutput::Held { holder_token }) => {
                renew_refused(state, (me, presented), w, holder_token)
            }
            (LeaseCall::Release { token: presented }, LeaseOutput::Released) => {
                Some(released(state, me, presented))
            }
            _ => None,
        }
    }

    /// Our histories' times are µs of true time: seconds with ms.
    fn describe_time(&self, time: u64) -> String {
        leasesim_history::time::seconds_us(time)
    }

    fn key(&self, input: &LeaseInput) -> String {
        input.session.clone()
    }

    fn describe_state(&self, state: &LeaseState) -> String {
        let holder = match state.holder {
            Holder::Free => "free".to_string(),
            Holder::Unknown => "unknown (after an unknown-outcome call)".to_string(),
            Holder::Held {
                owner,
                token,
                expiry_from_us,
                expiry_to_us,
            } => {
                let expiry = if expiry_from_us == expiry_to_us {
                    seconds_us(expiry_from_us)
                } else if expiry_to_us == u64::MAX {
                    format!("{} or later", seconds_us(expiry_from_us))
                } else {
                    format!(
                        "between {} and {}",
                        seconds_us(expiry_from_us),
                        seconds_us(expiry_to_us)
                    )
                };
                format!(
                    "held by {} with token {token}, expiring at {expiry} (authority clock)",
                    self.who(owner)
                )
            }
        };
        format!("{holder}; highest token so far {}", state.high_water)
    }

    fn describe_op(&self, input: &LeaseInput, output: Option<&LeaseOutput>) -> String {
        let who = self.who(input.owner);
        let call = match input.call {
            LeaseCall::Acquire => format!("{}: acquire by {who}", input.session),
            LeaseCall::Renew { token } => {
                format!("{}: renew by {who} of token {token}", input.session)
            }
            LeaseCall::Release { token } => {
                format!("{}: release by {who} of token {token}", input.session)
            }
        };
        let to = if input.window.to_us == u64::MAX {
            "∞".to_string()
        } else {
            seconds_us(input.window.to_us)
        };
        let result = match output {
            None => "outcome unknown".to_string(),
            Some(LeaseOutput::Granted {
                token, expiry_us, ..
            }) => format!(
                "granted token {token} expiring at {}",
                seconds_us(*expiry_us)
            ),
            Some(LeaseOutput::Held {
                holder_token: Some(t),
            }) => format!("held (holder token {t})"),
            Some(LeaseOutput::Held { holder_token: None }) => "held (no live holder)".to_string(),
            Some(LeaseOutput::Released) => "released".to_string(),
        };
        format!(
            "{call} in authority window [{}, {to}], {result}",
            seconds_us(input.window.from_us)
        )
    }

    /// The lease contract's rule the response breaks ([`rules`]).
    fn describe_rejection(
        &self,
        state: &LeaseState,
        input: &LeaseInput,
        output: Option<&LeaseOutput>,
    ) -> String {
        match output {
            Some(output) => rules::rejection(self, state, input, output),
            None => "an unknown outcome is accepted in every state".to_owned(),
        }
    }
}

impl Holder {
    /// Whether the record is `owner`'s lease of `token` and may be live at `at_us` (`false` when
    /// free or unknown).
    fn may_be_live_as(self, owner: u32, token: u64, at_us: u64) -> bool {
        match self {
            Holder::Held {
                owner: holder,
                token: held,
                expiry_to_us,
                ..
            } => holder == owner && held == token && may_be_live(expiry_to_us, at_us),
            Holder::Free | Holder::Unknown => false,
        }
    }
}

impl LeaseState {
    /// What every state the model reaches satisfies: a record's expiry interval is ordered,
    /// and its token is at most the high-water mark (every grant raises the mark to its token).
    fn is_consistent(&self) -> bool {
        match self.holder {
            Holder::Held {
                token,
                expiry_from_us,
                expiry_to_us,
                ..
            } => expiry_from_us <= expiry_to_us && token <= self.high_water,
            Holder::Free | Holder::Unknown => true,
        }
    }
}

/// Acquire granted: a live same-owner re-acquire keeps the token; a takeover of a free,
/// released or expired session takes a token above every earlier one.
/// `(from, to)`: the instants it can have been decided at ([`grant_instants`]).
fn acquire_granted(
    state: &LeaseState,
    me: u32,
    token: u64,
    expiry_us: u64,
    (from, to): (u64, u64),
) -> Option<LeaseState> {
    let takeover = token > state.high_water
        && match state.holder {
            Holder::Free | Holder::Unknown => true,
            Holder::Held { expiry_from_us, .. } => may_be_expired(expiry_from_us, to),
        };
    let keep = state.holder == Holder::Unknown || state.holder.may_be_live_as(me, token, from);
    (takeover || keep).then_some(granted(state, me, token, expiry_us))
}

/// Acquire refused: another owner's lease is live at some instant of the window.
fn acquire_refused(
    state: &LeaseState,
    me: u32,
    w: &AuthorityWindow,
    holder_token: Option<u64>,
) -> Option<LeaseState> {
    match state.holder {
        Holder::Unknown => Some(*state),
        Holder::Free => None,
        Holder::Held {
            owner,
            token,
            expiry_to_us,
            ..
        } => (owner != me
            && holder_token.is_none_or(|seen| seen == token)
            && may_be_live(expiry_to_us, w.from_us))
        .then_some(*state),
    }
}

/// Renew granted: the presented lease (`(owner, token)`) is the live one; the token stays.
/// `(from, _)`: the earliest instant it can have been decided at ([`grant_instants`]).
fn renew_granted(
    state: &LeaseState,
    (me, presented): (u32, u64),
    token: u64,
    expiry_us: u64,
    (from, _): (u64, u64),
) -> Option<LeaseState> {
    let ok = token == presented
        && (state.holder == Holder::Unknown || state.holder.may_be_live_as(me, token, from));
    ok.then_some(granted(state, me, token, expiry_us))
}

/// Renew refused: at some instant the live lease (if any) is not the presented one
/// (`(owner, token)`), and the answer names it.
fn renew_refused(
    state: &LeaseState,
    (me, presented): (u32, u64),
    w: &AuthorityWindow,
    holder_token: Option<u64>,
) -> Option<LeaseState> {
    let ok = match (state.holder, holder_token) {
        (Holder::Unknown, _) => true,
        (Holder::Free, None) => true,
        (Holder::Free, Some(_)) => false,
        (Holder::Held { expiry_from_us, .. }, None) => may_be_expired(expiry_from_us, w.to_us),
        (
            Holder::Held {
                owner,
                token,
                expiry_to_us,
                ..
            },
            Some(seen),
        ) => {
            seen == token
                && (owner, token) != (me, presented)
                && may_be_live(expiry_to_us, w.from_us)
        }
    };
    ok.then_some(*state)
}

/// Release: frees the session only if the presented lease is the current record.
fn released(state: &LeaseState, me: u32, presented: u64) -> LeaseState {
    match state.holder {
        Holder::Held { owner, token, .. } if owner == me && token == presented => LeaseState {
            holder: Holder::Free,
            ..*state
        },
        _ => *state,
    }
}

/// The state after a grant of `token` to `owner` expiring at `expiry_us`.
fn granted(state: &LeaseState, owner: u32, token: u64, expiry_us: u64) -> LeaseState {
    LeaseState {
        high_water: state.high_water.max(token),
        holder: Holder::Held {
            owner,
            token,
            expiry_from_us: expiry_us,
            expiry_to_us: expiry_us,
        },
    }
}

/// The state after a call whose outcome is unknown, placed at this point of the order (the
/// engine also tries it not taking effect at all): a release of the current record frees it; a
/// renew of it may have pushed its expiry to any later instant; an acquire may have kept,
/// taken over (with a token nobody saw) or been refused, so the record becomes unknown.
fn unknown_outcome(state: &LeaseState, input: &LeaseInput) -> LeaseState {
    let me = input.owner;
    match (input.call, state.holder) {
        (_, Holder::Unknown) | (LeaseCall::Acquire, _) => LeaseState {
            holder: Holder::Unknown,
            ..*state
        },
        // A renew can only extend the presented lease, if it is the current one.
        (
            LeaseCall::Renew { token: presented },
            Holder::Held {
                owner,
                token,
                expiry_from_us,
                ..
            },
        ) if owner == me && token == presented => LeaseState {
            holder: Holder::Held {
                owner,
                token,
                expiry_from_us,
                expiry_to_us: u64::MAX,
            },
            ..*state
        },
        // A release frees the session only if the presented lease is the current record.
        (LeaseCall::Release { token: presented }, Holder::Held { owner, token, .. })
            if owner == me && token == presented =>
        {
            LeaseState {
                holder: Holder::Free,
                ..*state
            }
        }
        _ => *state,
    }
}
