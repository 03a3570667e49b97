//! Expiry by observation (client-go's rule): per session, the last resourceVersion this
//! candidate saw and when, on its own monotonic clock, it first saw it.

use std::collections::BTreeMap;
use std::time::Duration;

use k8s_openapi::api::coordination::v1::Lease as LeaseObject;

use crate::clock::Instant;
use crate::lease::SessionId;
use crate::sync::{Mutex, lock};

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
    /// `object` was seen at `at`: a resourceVersion other than the last one seen restarts
    /// the count from `at`; the same one keeps the earlier instant.
    pub fn saw(&self, session: &SessionId, object: &LeaseObject, at: Instant) {
        let rv = object.metadata.resource_version.clone().unwrap_or_default();
        let mut seen = lock(&self.seen);
        match seen.get(session) {
            Some(last) if last.resource_version == rv => {}
            _ => {
                seen.insert(
                    session.clone(),
                    Seen {
                        resource_version: rv,
                        since: at,
                    },
                );
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
        let rv = object
            .metadata
            .resource_version
            .as_deref()
            .unwrap_or_default();
        lock(&self.seen)
            .get(session)
            .is_some_and(|last| last.resource_version == rv && now >= last.since + duration)
    }
}
