//! `EtcdLease`: session leases kept in an etcd v3 server we did not write (the `etcd`
//! feature; issue 16, deliverable 5).
//!
//! # Design
//! - **acquire**: read the session's holder key and token counter in one snapshot (a
//!   transaction of two gets). Held by another owner: [`LeaseError::Held`] with its token.
//!   Held by the caller: keep its etcd lease alive and keep the token. Free: grant an etcd
//!   lease with the TTL, then one transaction that, if the holder key is still absent
//!   (`create_revision == 0`) and the counter is unchanged (`mod_revision` as read), puts the
//!   counter `+1` and the holder key (with the grant's lease) naming the caller and that
//!   token. A lost race revokes the unused grant and reads again. So the token is the
//!   counter: it grows with every takeover and survives the holder key, which goes with its
//!   etcd lease.
//! - **renew**: read the holder key; unless it names the caller's owner and token, Held.
//!   Otherwise keep-alive the etcd lease attached to it; a lease etcd no longer has (expired
//!   or revoked) is Held too. etcd refuses to renew a lease whose TTL has run out on its
//!   clock, even before it has deleted it (`lessor.Renew` waits for the revocation), so an
//!   expired hold is never revived.
//! - **release**: read the holder key; if it names the caller's owner and token, revoke its
//!   etcd lease (which deletes the key). Lease ids are never reused, so a revoke racing with
//!   expiry and a takeover revokes nothing of the new holder's.
//!
//! # Pause points
//! Each call decides from its read and then writes (grant + transaction, keep-alive, revoke);
//! between the two it reaches [`PausePoint::AfterAuthorityRead`] on the hooks given with
//! [`EtcdLease::with_hooks`] (none by default), where a harness can hold it while the keys
//! change under the decision: the transaction's revision compares and etcd's refusal to renew
//! or revoke another lease id are what must catch it (docs/world.md#freezes-and-pause-points).
//! The world does not host EtcdLease, so no scenario stages it yet.
//!
//! # Validity (docs/contracts.md#client-side-validity, judged by docs/checks.md#stop)
//! The returned [`Lease`]'s expiry is on the **client's** clock: the start of the request
//! that set the etcd lease's TTL (the grant, or the keep-alive of a renew or same-owner
//! acquire) plus the TTL etcd answered. etcd starts the TTL when it applies the request,
//! after it was sent, so the client's expiry is never later than etcd's (clock rates being
//! equal).
//!
//! # etcd's slack (measured against etcd 3.4.23, `/usr/bin/etcd`)
//! - **TTLs are whole seconds** and at least etcd's minimum, `ceil(1.5 × election timeout)`:
//!   2 s with the default 1000 ms election timeout. A configured TTL is rounded up to whole
//!   seconds; etcd raises one below its minimum, and [`Lease::ttl`] is what etcd granted.
//! - **Expiry is lazy**: the leader's lessor looks for expired leases every 500 ms and
//!   revokes them through raft, so a holder key outlives its TTL by up to about 0.5 s plus
//!   a commit (measured: a key put with a 2 s lease was gone 2.16 s after the grant once,
//!   2.49–2.51 s five times). A contender sees [`LeaseError::Held`] during that time. Safe (the old holder
//!   stopped by its own expiry already), only slower: the conformance run in real time
//!   (`tests/etcd/`) gives the suite a TTL one [`EXPIRY_SLACK`] longer than etcd's.
//! - **Leader changes extend leases**: without `--experimental-enable-lease-checkpoint`
//!   (off in 3.4), a new leader (or a restarted single member) refreshes every lease to its
//!   full TTL plus an election timeout. Again only a longer wait for contenders; a holder
//!   still stops at its own expiry.

mod keys;

use std::fmt;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use etcd_client::{Client, Compare, CompareOp, ConnectOptions, PutOptions, Txn, TxnOp};

use crate::clock::{Clock, Instant};
use crate::hooks::{HookSlot, PausePoint};
use crate::lease::{Lease, LeaseError, Owner, SessionId, SessionLease};
use crate::mutant::Mutant;

use keys::{Holder, decode_token};
pub use keys::{PREFIX, holder_key, token_key};

/// How much longer than etcd's TTL a holder key can outlive it: the lessor's 500 ms
/// revocation interval plus a commit and a loaded scheduler. A contender that waits for an
/// expiry waits this much more (the real-time conformance run does).
pub const EXPIRY_SLACK: Duration = Duration::from_millis(1000);

/// How many times an acquire reads again after losing the transaction to a concurrent one
/// (each loss means the session just changed hands or was freed again) before it reports
/// [`LeaseError::Unavailable`].
const ACQUIRE_ATTEMPTS: usize = 8;

/// How to reach etcd and what to ask of it.
#[derive(Clone, Debug)]
pub struct EtcdLeaseConfig {
    /// The etcd client endpoint, `host:port` (plain HTTP/2; e.g. `127.0.0.1:2379`).
    pub endpoint: String,
    /// The TTL to ask for; rounded up to whole seconds, raised by etcd to its minimum (2 s
    /// by default). A zero TTL asks for etcd's minimum.
    pub ttl: Duration,
    /// The longest any one etcd call may take before the lease call reports
    /// [`LeaseError::Unavailable`] (its outcome then unknown).
    pub call_timeout: Duration,
    /// The run's planted bug (`None`: the correct code). The one planted here is
    /// [`Mutant::ReleaseMatchesOwnerOnly`]; any other changes nothing in this backend.
    pub mutant: Option<Mutant>,
}

/// A [`SessionLease`] over an etcd v3 server (module docs: design, validity, slack).
pub struct EtcdLease {
    client: Client,
    config: EtcdLeaseConfig,
    /// The TTL asked of etcd, in whole seconds.
    ttl_s: i64,
    clock: Arc<dyn Clock>,
    hooks: HookSlot,
}

impl fmt::Debug for EtcdLease {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("EtcdLease")
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

/// The holder key as read: its record, the etcd lease attached to it.
struct HeldBy {
    holder: Holder,
    lease_id: i64,
}

/// The token counter as read: its value (0 when absent) and `mod_revision` (0 when absent).
struct Counter {
    value: u64,
    mod_revision: i64,
}

impl EtcdLease {
    /// Connects to the etcd at `config.endpoint` and checks that it answers (a status call
    /// within `config.call_timeout`); `clock` is the client's clock, that of the returned
    /// leases' expiry.
    ///
    /// # Errors
    /// [`LeaseError::Unavailable`] naming the endpoint when it is not a valid address or
    /// etcd does not answer in time.
    pub async fn connect(
        config: EtcdLeaseConfig,
        clock: Arc<dyn Clock>,
    ) -> Result<EtcdLease, LeaseError> {
        let ttl_s = whole_seconds(config.ttl);
        let options = ConnectOptions::new()
            .with_connect_timeout(config.call_timeout)
            .with_timeout(config.call_timeout);
        let url = format!("http://{}", config.endpoint);
        let connect = Client::connect([url], Some(options));
        let client = bounded(&*clock, &config, "connect", connect).await?;
        let lease = EtcdLease {
            client,
            config,
            ttl_s,
            clock,
            hooks: HookSlot::default(),
        };
        lease
            .call("status", |mut c| async move { c.status().await })
            .await?;
        Ok(lease)
    }

    /// The same lease calling `hooks` between each decision and its write
    /// ([`PausePoint::AfterAuthorityRead`], module docs).
    pub fn with_hooks(mut self, hooks: HookSlot) -> Self {
        self.hooks = hooks;
        self
    }

    /// Reaches [`PausePoint::AfterAuthorityRead`]: a decision was made from a read and its
    /// write is not sent yet.
    async fn decided(&self) {
        self.hooks.pause_point(PausePoint::AfterAuthorityRead).await;
    }

    /// The TTL asked of etcd, in whole seconds.
    pub fn ttl_seconds(&self) -> i64 {
        self.ttl_s
    }

    /// Runs one etcd call on a clone of the client (a cheap handle on one channel), bounded
    /// by the call timeout on the client's clock.
    async fn call<T, F, Fut>(&self, what: &str, f: F) -> Result<T, LeaseError>
    where
        F: FnOnce(Client) -> Fut,
        Fut: Future<Output = Result<T, etcd_client::Error>>,
    {
        bounded(&*self.clock, &self.config, what, f(self.client.clone())).await
    }

    /// The holder key and the token counter of `session`, in one snapshot.
    async fn read(&self, session: &SessionId) -> Result<(Option<HeldBy>, Counter), LeaseError> {
        let holder_key = holder_key(session);
        let token_key = token_key(session);
        let txn = Txn::new().and_then([
            TxnOp::get(holder_key.clone(), None),
            TxnOp::get(token_key.clone(), None),
        ]);
        let response = self
            .call("read the session", |mut c| async move { c.txn(txn).await })
            .await?;
        let mut kvs = response.op_responses().into_iter().map(|op| match op {
            etcd_client::TxnOpResponse::Get(mut get) => get.take_kvs().into_iter().next(),
            _ => None,
        });
        let (holder, counter) = (kvs.next().flatten(), kvs.next().flatten());
        let bad = |key: &str, why: String| LeaseError::Unavailable {
            reason: format!("etcd key {key:?}: {why}; remove it or use another etcd"),
        };
        let held = match holder {
            None => None,
            Some(kv) => Some(HeldBy {
                holder: Holder::decode(kv.value()).map_err(|e| bad(&holder_key, e))?,
                lease_id: kv.lease(),
            }),
        };
        let counter = match counter {
            None => Counter {
                value: 0,
                mod_revision: 0,
            },
            Some(kv) => Counter {
                value: decode_token(kv.value()).map_err(|e| bad(&token_key, e))?,
                mod_revision: kv.mod_revision(),
            },
        };
        Ok((held, counter))
    }

    /// Keeps etcd lease `id` alive: `Some(ttl)` as etcd answered it, `None` when etcd no
    /// longer has the lease (expired or revoked).
    async fn keep_alive(&self, id: i64) -> Result<Option<Duration>, LeaseError> {
        let answer = self
            .call("keep the lease alive", |mut c| async move {
                // The first keep-alive is sent by `lease_keep_alive`, which answers an error
                // for a lease etcd does not have and drops the TTL; the second reads it.
                let (mut keeper, mut stream) = match c.lease_keep_alive(id).await {
                    Err(etcd_client::Error::LeaseKeepAliveError(e)) if e == "lease not found" => {
                        return Ok(None);
                    }
                    other => other?,
                };
                keeper.keep_alive().await?;
                Ok(stream.message().await?.map(|r| r.ttl()))
            })
            .await?;
        Ok(answer
            .filter(|&ttl| ttl > 0)
            .map(|ttl| Duration::from_secs(ttl.unsigned_abs())))
    }

    /// Revokes etcd lease `id`, ignoring every error: the lease then expires by itself.
    async fn revoke_quietly(&self, id: i64) {
        let _ = self
            .call("revoke an unused lease", |mut c| async move {
                c.lease_revoke(id).await
            })
            .await;
    }

    fn lease(
        &self,
        session: &SessionId,
        owner: &Owner,
        token: u64,
        started: Instant,
        ttl: Duration,
    ) -> Lease {
        Lease::new(session.clone(), owner.clone(), token, started + ttl, ttl)
    }

    /// One attempt at granting a free session: `Ok(None)` when a concurrent call won.
    async fn try_grant(
        &self,
        session: &SessionId,
        owner: &Owner,
        counter: &Counter,
    ) -> Result<Option<Lease>, LeaseError> {
        let ttl_s = self.ttl_s;
        self.decided().await;
        let started = self.clock.now();
        let grant = self
            .call("grant a lease", |mut c| async move {
                c.lease_grant(ttl_s, None).await
            })
            .await?;
        let (id, ttl) = (grant.id(), Duration::from_secs(grant.ttl().unsigned_abs()));
        let token = counter.value + 1;
        let (holder_key, token_key) = (holder_key(session), token_key(session));
        let txn = Txn::new()
            .when([
                Compare::create_revision(holder_key.clone(), CompareOp::Equal, 0),
                Compare::mod_revision(token_key.clone(), CompareOp::Equal, counter.mod_revision),
            ])
            .and_then([
                TxnOp::put(token_key, token.to_string(), None),
                TxnOp::put(
                    holder_key,
                    Holder::new(owner, token).encode(),
                    Some(PutOptions::new().with_lease(id)),
                ),
            ]);
        match self
            .call("take the session", |mut c| async move { c.txn(txn).await })
            .await
        {
            Ok(response) if response.succeeded() => {
                Ok(Some(self.lease(session, owner, token, started, ttl)))
            }
            Ok(_) => {
                self.revoke_quietly(id).await;
                Ok(None)
            }
            Err(e) => {
                // The outcome is unknown: if the take landed, revoking ends it (the token
                // stays spent, which only makes the next one larger).
                self.revoke_quietly(id).await;
                Err(e)
            }
        }
    }
}

#[async_trait]
impl SessionLease for EtcdLease {
    async fn acquire(&self, session: &SessionId, owner: &Owner) -> Result<Lease, LeaseError> {
        for _ in 0..ACQUIRE_ATTEMPTS {
            let started = self.clock.now();
            let (held, counter) = self.read(session).await?;
            match held {
                Some(held) if held.holder.is(owner) => {
                    self.decided().await;
                    match self.keep_alive(held.lease_id).await? {
                        Some(ttl) => {
                            return Ok(self.lease(session, owner, held.holder.token, started, ttl));
                        }
                        // Expired on etcd's clock; the key goes with the revocation.
                        None => continue,
                    }
                }
                Some(held) => {
                    return Err(LeaseError::Held {
                        holder_token: Some(held.holder.token),
                    });
                }
                None => {}
            }
            if let Some(lease) = self.try_grant(session, owner, &counter).await? {
                return Ok(lease);
            }
        }
        Err(LeaseError::Unavailable {
            reason: format!(
                "session {session} changed hands during each of {ACQUIRE_ATTEMPTS} attempts to \
                 acquire it"
            ),
        })
    }

    async fn renew(&self, lease: &Lease) -> Result<Lease, LeaseError> {
        let started = self.clock.now();
        let (held, _) = self.read(lease.session()).await?;
        let Some(held) = held else {
            return Err(LeaseError::Held { holder_token: None });
        };
        if !held.holder.is(lease.owner()) || held.holder.token != lease.token() {
            return Err(LeaseError::Held {
                holder_token: Some(held.holder.token),
            });
        }
        self.decided().await;
        match self.keep_alive(held.lease_id).await? {
            Some(ttl) => {
                Ok(self.lease(lease.session(), lease.owner(), lease.token(), started, ttl))
            }
            None => Err(LeaseError::Held { holder_token: None }),
        }
    }

    async fn release(&self, lease: &Lease) -> Result<(), LeaseError> {
        let (held, _) = self.read(lease.session()).await?;
        let Some(held) = held else { return Ok(()) };
        let token_matches = held.holder.token == lease.token()
            || self.config.mutant == Some(Mutant::ReleaseMatchesOwnerOnly);
        if !held.holder.is(lease.owner()) || !token_matches {
            return Ok(());
        }
        self.decided().await;
        let id = held.lease_id;
        self.call("revoke the lease", |mut c| async move {
            match c.lease_revoke(id).await {
                // Gone already (expired meanwhile): nothing of ours is left to end.
                Err(etcd_client::Error::GRpcStatus(status))
                    if status.code() == tonic::Code::NotFound =>
                {
                    Ok(())
                }
                other => other.map(drop),
            }
        })
        .await
    }
}

/// `ttl` in whole seconds, rounded up, at least 1 (etcd TTLs are whole seconds).
fn whole_seconds(ttl: Duration) -> i64 {
    let seconds = ttl.as_secs() + u64::from(ttl.subsec_nanos() > 0);
    i64::try_from(seconds.max(1)).unwrap_or(i64::MAX)
}

/// `call` bounded by `config.call_timeout` on `clock`; etcd errors and the timeout become
/// [`LeaseError::Unavailable`] naming the endpoint and `what` was being done.
async fn bounded<T>(
    clock: &dyn Clock,
    config: &EtcdLeaseConfig,
    what: &str,
    call: impl Future<Output = Result<T, etcd_client::Error>>,
) -> Result<T, LeaseError> {
    let unavailable = |why: String| LeaseError::Unavailable {
        reason: format!("etcd at {}: {what}: {why}", config.endpoint),
    };
    tokio::select! {
        result = call => result.map_err(|e| unavailable(e.to_string())),
        () = clock.sleep(config.call_timeout) => {
            Err(unavailable(format!("no answer within {:?}", config.call_timeout)))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ttls_are_rounded_up_to_whole_seconds() {
        assert_eq!(whole_seconds(Duration::ZERO), 1);
        assert_eq!(whole_seconds(Duration::from_millis(1)), 1);
        assert_eq!(whole_seconds(Duration::from_secs(2)), 2);
        assert_eq!(whole_seconds(Duration::from_millis(2001)), 3);
    }
}
