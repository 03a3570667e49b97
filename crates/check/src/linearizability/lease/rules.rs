//! Why the timed lease model ([`super::TimedLease`]) rejects a call: the rule of the
//! lease contract (docs/contracts.md#lease) the response breaks in a state, in plain words, for
//! the explanation of a non-linearizable history. Times are on the authority's clock.

use super::{AuthorityWindow, Holder, LeaseCall, LeaseInput, LeaseOutput, LeaseState, TimedLease};
use leasesim_history::time::seconds_us;

/// The rule `input` answering `output` breaks in `state` (called where the model's step
/// refused it).
pub(super) fn rejection(
    model: &TimedLease,
    state: &LeaseState,
    input: &LeaseInput,
    output: &LeaseOutput,
) -> String {
    let w = &input.window;
    match (input.call, *output) {
        (
            LeaseCall::Acquire,
            LeaseOutput::Granted {
                token,
                expiry_us,
                ttl_us,
            },
        ) => outside_window(w, expiry_us, ttl_us)
            .unwrap_or_else(|| acquire_granted(model, state, input.owner, token)),
        (LeaseCall::Acquire, LeaseOutput::Held { holder_token }) => {
            acquire_held(model, state, input.owner, w, holder_token)
        }
        (
            LeaseCall::Renew { token: presented },
            LeaseOutput::Granted {
                token,
                expiry_us,
                ttl_us,
            },
        ) => outside_window(w, expiry_us, ttl_us)
            .unwrap_or_else(|| renew_granted(model, state, (input.owner, presented), w, token)),
        (LeaseCall::Renew { token: presented }, LeaseOutput::Held { holder_token }) => {
            renew_held(state, (input.owner, presented), w, holder_token)
        }
        (call, output) => format!("a {} cannot answer {output:?}", call_name(call)),
    }
}

fn call_name(call: LeaseCall) -> &'static str {
    match call {
        LeaseCall::Acquire => "acquire",
        LeaseCall::Renew { .. } => "renew",
        LeaseCall::Release { .. } => "release",
    }
}

/// A grant is decided at `expiry − ttl`: outside the call's window it cannot be this call's.
fn outside_window(w: &AuthorityWindow, expiry_us: u64, ttl_us: u64) -> Option<String> {
    let at = expiry_us.checked_sub(ttl_us);
    let inside = at.is_some_and(|at| at.saturating_sub(1) <= w.to_us && at >= w.from_us);
    (!inside).then(|| {
        format!(
            "a grant expiring at {} with TTL {} was decided at {}, outside the call's window \
             {}",
            seconds_us(expiry_us),
            seconds_us(ttl_us),
            at.map_or("before the clock started".to_owned(), seconds_us),
            window(w)
        )
    })
}

fn window(w: &AuthorityWindow) -> String {
    let to = if w.to_us == u64::MAX {
        "∞".to_owned()
    } else {
        seconds_us(w.to_us)
    };
    format!("[{}, {to}]", seconds_us(w.from_us))
}

fn acquire_granted(model: &TimedLease, state: &LeaseState, me: u32, token: u64) -> String {
    match state.holder {
        Holder::Held {
            owner,
            token: held,
            expiry_from_us,
            ..
        } if owner != me => format!(
            "{}'s token-{held} lease is live until at least {}: another owner's acquire must \
             get Held, not token {token}",
            model.who(owner),
            seconds_us(expiry_from_us)
        ),
        Holder::Held { token: held, .. } if held != token && token <= state.high_water => format!(
            "the token must advance on a takeover (above {}, the highest so far) and stay {held} \
             on a live re-acquire, but the grant has token {token}",
            state.high_water
        ),
        Holder::Held { token: held, .. } if held != token => format!(
            "{}'s lease is still live, so its re-acquire keeps token {held}, not {token}",
            model.who(me)
        ),
        _ => format!(
            "a takeover's token must exceed every earlier grant's ({}), but the grant has token \
             {token}",
            state.high_water
        ),
    }
}

fn acquire_held(
    model: &TimedLease,
    state: &LeaseState,
    me: u32,
    w: &AuthorityWindow,
    holder_token: Option<u64>,
) -> String {
    match state.holder {
        Holder::Held {
            owner,
            token,
            expiry_to_us,
            ..
        } => {
            if owner == me {
                format!(
                    "{} holds token {token} itself: a live same-owner re-acquire is granted, \
                     not refused",
                    model.who(me)
                )
            } else if holder_token.is_some_and(|seen| seen != token) {
                format!(
                    "the refusal names holder token {}, but the lease's token is {token}",
                    holder_token.unwrap_or_default()
                )
            } else {
                format!(
                    "{}'s token-{token} lease expired by {}, before the call's window {}: the \
                     acquire must be granted",
                    model.who(owner),
                    seconds_us(expiry_to_us),
                    window(w)
                )
            }
        }
        _ => "the session is free (never granted, or released): an acquire must be granted, \
              not refused"
            .to_owned(),
    }
}

fn renew_granted(
    model: &TimedLease,
    state: &LeaseState,
    (me, presented): (u32, u64),
    w: &AuthorityWindow,
    token: u64,
) -> String {
    if token != presented {
        return format!("a renew keeps the presented token {presented}, but granted token {token}");
    }
    match state.holder {
        Holder::Held {
            owner,
            token: held,
            expiry_to_us,
            ..
        } => {
            if (owner, held) != (me, presented) {
                format!(
                    "the current lease is {}'s token {held}, not the presented {}'s token \
                     {presented}: the renew must get Held",
                    model.who(owner),
                    model.who(me)
                )
            } else {
                format!(
                    "the lease expired by {}, before the call's window {}: a renew of an \
                     expired lease must get Held",
                    seconds_us(expiry_to_us),
                    window(w)
                )
            }
        }
        _ => "nobody holds the session (never granted, or released): a renew must get Held, it \
              never recreates a record"
            .to_owned(),
    }
}

fn renew_held(
    state: &LeaseState,
    (me, presented): (u32, u64),
    w: &AuthorityWindow,
    holder_token: Option<u64>,
) -> String {
    match (state.holder, holder_token) {
        (Holder::Held { expiry_from_us, .. }, None) => format!(
            "the lease is live until at least {}, through the call's window {}: a refusal \
             saying no lease is live is wrong",
            seconds_us(expiry_from_us),
            window(w)
        ),
        (
            Holder::Held {
                owner,
                token,
                expiry_to_us,
                ..
            },
            Some(seen),
        ) => {
            if seen != token {
                format!("the refusal names holder token {seen}, but the lease's token is {token}")
            } else if (owner, token) == (me, presented) {
                format!(
                    "the presented lease (token {presented}) is the live one: its renew must be \
                     granted"
                )
            } else {
                format!(
                    "the token-{token} lease expired by {}, before the call's window {}: the \
                     refusal cannot name it as live",
                    seconds_us(expiry_to_us),
                    window(w)
                )
            }
        }
        (_, seen) => format!(
            "nobody holds the session, so the refusal cannot name holder token {}",
            seen.unwrap_or_default()
        ),
    }
}
