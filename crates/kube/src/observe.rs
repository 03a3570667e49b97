//! Expiry by observation (client-go's rule): per session, the last resourceVersion this
//! candidate saw and when, on its own monotonic clock, it first saw it.
//!
//! One `KubeLease` may serve many concurrent calls, so a read's reply can arrive after a
//! newer version was already seen (by another call's read or write). resourceVersion is
//! opaque in Kubernetes, but every API server backed by etcd (and the world's) writes
//! increasing decimal integers: when both parse, an older reply is stale — it neither restarts
//! the count nor is decided from (the call reads again). When either does not parse, any
//! other version counts as a change, as in client-go.

use std::collections::BTreeMap;
use std::time::Duration;

use k8s_openapi::api::coordination::v1::Lease as LeaseObject;

use leasesim_core::clock::Instant;
use leasesim_core::lease::SessionId;
use leasesim_core::sync::{Mutex, lock};

/// What this candidate has seen of each session's object.
#[derive(Debug, Default)]
pub(super) struct Observations {
    seen: Mutex<BTreeMap<SessionId, Seen>>,
}

#[derive(Clone, Debug)]
struct Seen {
    resource_version: String,
    since: Instant,
}

impl Observations {
    /// `object` was seen at `at`: a newer resourceVersion than the last one seen restarts
    /// the count from `at`; the same one keeps the earlier instant. Returns `false` (and
    /// changes nothing) when `object` is older than what was already seen: a stale reply.
    pub fn saw(&self, session: &SessionId, object: &LeaseObject, at: Instant) -> bool {
        let rv = resource_version(object).to_owned();
        let mut seen = lock(&self.seen);
        match seen.get(session) {
            Some(last) if last.resource_version == rv => true,
            Some(last) if older(&rv, &last.resource_version) => false,
            _ => {
                seen.insert(
                    session.clone(),
                    Seen {
                        resource_version: rv,
                        since: at,
                    },
                );
                true
            }
        }
    }

    /// Whether `object` has gone unchanged for `duration` on this candidate's clock at `now`
    /// (`now >= since + duration` is expired). An object never seen (or seen at another
    /// resourceVersion) is not expired: the count starts at the read that noted it.
    pub fn expired(
        &self,
        session: &SessionId,
        object: &LeaseObject,
        duration: Duration,
        now: Instant,
    ) -> bool {
        let rv = resource_version(object);
        lock(&self.seen)
            .get(session)
            .is_some_and(|last| last.resource_version == rv && now >= last.since + duration)
    }

    /// Whether this candidate has since seen `session`'s object at a newer resourceVersion
    /// than `object`'s (another of its calls wrote or read it after this read): a decision
    /// from `object` would name a holder that is no longer current, so read again.
    pub fn superseded(&self, session: &SessionId, object: &LeaseObject) -> bool {
        let rv = resource_version(object);
        lock(&self.seen)
            .get(session)
            .is_some_and(|last| older(rv, &last.resource_version))
    }
}

/// `object`'s resourceVersion (empty when the server gave none).
fn resource_version(object: &LeaseObject) -> &str {
    object
        .metadata
        .resource_version
        .as_deref()
        .unwrap_or_default()
}

/// Whether resourceVersion `rv` is older than `than`: only when both are decimal integers.
fn older(rv: &str, than: &str) -> bool {
    match (rv.parse::<u64>(), than.parse::<u64>()) {
        (Ok(rv), Ok(than)) => rv < than,
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at_rv(rv: &str) -> LeaseObject {
        let mut object = LeaseObject::default();
        object.metadata.resource_version = Some(rv.to_owned());
        object
    }

    fn secs(s: u64) -> Instant {
        Instant::from_origin(Duration::from_secs(s))
    }

    #[test]
    fn the_count_starts_when_a_version_is_first_seen_and_stale_replies_change_nothing() {
        let seen = Observations::default();
        let s1 = SessionId::new("s1").unwrap();
        let ttl = Duration::from_secs(10);
        assert!(seen.saw(&s1, &at_rv("5"), secs(0)));
        assert!(
            seen.saw(&s1, &at_rv("5"), secs(4)),
            "the same version keeps its instant"
        );
        assert!(!seen.expired(&s1, &at_rv("5"), ttl, secs(9)));
        assert!(
            seen.expired(&s1, &at_rv("5"), ttl, secs(10)),
            "now == since + ttl is expired"
        );
        assert!(seen.saw(&s1, &at_rv("7"), secs(10)));
        assert!(
            !seen.saw(&s1, &at_rv("6"), secs(11)),
            "a reply older than 7 is stale"
        );
        assert!(!seen.expired(&s1, &at_rv("7"), ttl, secs(19)));
        assert!(seen.expired(&s1, &at_rv("7"), ttl, secs(20)));
        assert!(
            !seen.expired(&s1, &at_rv("6"), ttl, secs(99)),
            "never judged on a version not seen last"
        );
    }

    /// The race behind a flaky conformance run (`concurrent_takeover_after_expiry_one_winner`):
    /// a loser read rv 1 (the expired holder), the winner's write noted rv 2, and the loser
    /// refused naming rv 1's token. A read older than what was since seen is superseded (read
    /// again); the same or a newer one is not; opaque versions never are.
    #[test]
    fn a_read_older_than_the_last_seen_version_is_superseded() {
        let seen = Observations::default();
        let s1 = SessionId::new("s1").unwrap();
        assert!(!seen.superseded(&s1, &at_rv("1")), "nothing seen yet");
        assert!(seen.saw(&s1, &at_rv("1"), secs(0)));
        assert!(!seen.superseded(&s1, &at_rv("1")));
        assert!(seen.saw(&s1, &at_rv("2"), secs(10)));
        assert!(seen.superseded(&s1, &at_rv("1")));
        assert!(!seen.superseded(&s1, &at_rv("2")));
        assert!(!seen.superseded(&s1, &at_rv("3")));
        assert!(seen.saw(&s1, &at_rv("b"), secs(11)));
        assert!(!seen.superseded(&s1, &at_rv("a")));
    }

    #[test]
    fn opaque_versions_count_any_change_as_new() {
        let seen = Observations::default();
        let s1 = SessionId::new("s1").unwrap();
        assert!(seen.saw(&s1, &at_rv("b"), secs(0)));
        assert!(seen.saw(&s1, &at_rv("a"), secs(3)));
        assert!(!seen.expired(&s1, &at_rv("a"), Duration::from_secs(10), secs(12)));
        assert!(seen.expired(&s1, &at_rv("a"), Duration::from_secs(10), secs(13)));
    }
}
