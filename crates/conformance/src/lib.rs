//! The lease conformance suite: every rule of the [`SessionLease`] contract
//! (docs/contracts.md#lease), runnable against any backend.
//!
//! A backend is tested through a [`Subject`]: the backend plus an `advance` callback that
//! moves the authority's time forward (a fake clock's advance, or a real sleep over a small
//! TTL). The suite never sleeps by itself. [`conformance_tests!`](crate::conformance_tests)
//! expands into one named `#[test]` per rule, so a failure names the rule:
//!
//! ```
//! leasesim_conformance::conformance_tests!(|| async {
//!     let clock = leasesim_core::clock::ManualClock::new();
//!     let ttl = std::time::Duration::from_secs(10);
//!     let lease = leasesim_core::lease::MemLease::new(std::sync::Arc::new(clock.clone()), ttl);
//!     leasesim_conformance::Subject::with_manual_clock(std::sync::Arc::new(lease), clock, ttl)
//! });
//! ```
//!
//! Rules can also be run one by one ([`RULES`]), e.g. to show that a wrong variant fails
//! exactly the rules it breaks.
//!
//! Every rule uses session ids of its own, `{prefix}{rule}.{name}` ([`Subject::session`]), so
//! all rules can run at once against one shared backend (a real cluster, one service); the
//! prefix ([`Subject::with_session_prefix`], empty by default) separates runs of the suite
//! against a backend that keeps its records forever, such as Kubernetes Lease objects.

use std::fmt;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use leasesim_core::clock::ManualClock;
use leasesim_core::lease::{Lease, LeaseError, Owner, SessionId, SessionLease};

pub use leasesim_core::BoxFuture;

/// Longest prefix [`Subject::with_session_prefix`] accepts, in bytes: with the longest rule
/// name and a short session name, every id stays within
/// [`SESSION_ID_MAX_BYTES`](leasesim_core::lease::SESSION_ID_MAX_BYTES).
pub const SESSION_PREFIX_MAX_BYTES: usize = 128;

/// Moves the authority's time forward by the given duration.
pub type Advance = Arc<dyn Fn(Duration) -> BoxFuture<()> + Send + Sync>;

/// A backend under test, fresh for each rule.
pub struct Subject {
    /// The backend.
    pub lease: Arc<dyn SessionLease>,
    /// Moves the authority's time forward.
    pub advance: Advance,
    /// The TTL the backend grants.
    pub ttl: Duration,
    /// Whatever must live as long as the backend (a server, a temporary directory).
    guards: Vec<Box<dyn std::any::Any + Send + Sync>>,
    /// Prefix of every session id this run of the suite uses ([`Subject::with_session_prefix`]).
    session_prefix: String,
    /// The rule running, whose name is the second part of every session id it uses.
    rule: &'static str,
}

impl Subject {
    fn new(lease: Arc<dyn SessionLease>, advance: Advance, ttl: Duration) -> Self {
        Subject {
            lease,
            advance,
            ttl,
            guards: Vec::new(),
            session_prefix: String::new(),
            rule: "",
        }
    }

    /// A backend whose authority reads `clock`.
    pub fn with_manual_clock(
        lease: Arc<dyn SessionLease>,
        clock: ManualClock,
        ttl: Duration,
    ) -> Self {
        let advance: Advance = Arc::new(move |d| {
            clock.advance(d);
            Box::pin(async {})
        });
        Subject::new(lease, advance, ttl)
    }

    /// A backend whose clock cannot be moved: time advances by really sleeping, so use a
    /// small TTL. Rules that need an exact instant (`now == expiry`) then check `now >=
    /// expiry` instead.
    pub fn with_real_time(lease: Arc<dyn SessionLease>, ttl: Duration) -> Self {
        // Real time is the point here: this subject is for backends whose clock is real.
        #[allow(clippy::disallowed_methods)]
        let advance: Advance = Arc::new(|d| Box::pin(tokio::time::sleep(d)));
        Subject::new(lease, advance, ttl)
    }

    /// The same subject, keeping `guard` (e.g. the server the backend talks to) alive until
    /// the rule has run.
    pub fn keep_alive(mut self, guard: impl std::any::Any + Send + Sync) -> Self {
        self.guards.push(Box::new(guard));
        self
    }

    /// The same subject, prefixing every session id with `prefix`.
    ///
    /// Every rule already has its own namespace of session ids (`{rule}.{name}`), so rules
    /// can run in parallel against one shared backend (a real cluster, one service). A backend
    /// that keeps its records forever (Kubernetes Lease objects are never deleted) also needs
    /// a prefix of its own per run of the suite, e.g. `run-<unix seconds>-`.
    ///
    /// # Errors
    /// [`LeaseError::InvalidSession`] when the prefix makes a session id the suite uses
    /// invalid (too long, a control character): at most [`SESSION_PREFIX_MAX_BYTES`] bytes.
    pub fn with_session_prefix(mut self, prefix: impl Into<String>) -> Result<Self, LeaseError> {
        let prefix = prefix.into();
        if prefix.len() > SESSION_PREFIX_MAX_BYTES {
            return Err(LeaseError::InvalidSession {
                reason: format!(
                    "session prefix is {} bytes long; the limit is {SESSION_PREFIX_MAX_BYTES}",
                    prefix.len()
                ),
            });
        }
        SessionId::new(format!("{prefix}x"))?;
        self.session_prefix = prefix;
        Ok(self)
    }

    /// The session id `name` means in the running rule: `{prefix}{rule}.{name}`.
    pub fn session(&self, name: &str) -> SessionId {
        let id = format!("{}{}.{name}", self.session_prefix, self.rule);
        SessionId::new(id).expect("prefix and rule names are checked to fit a session id")
    }

    /// The subject as rule `rule` sees it (its own namespace of session ids).
    #[doc(hidden)]
    pub fn for_rule(mut self, rule: &'static str) -> Self {
        self.rule = rule;
        self
    }

    async fn advance(&self, d: Duration) {
        (self.advance)(d).await
    }
}

/// A rule the backend broke, with what it did instead.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct RuleViolation {
    /// The rule's name (as in [`RULES`]).
    pub rule: &'static str,
    /// What happened.
    pub detail: String,
}

impl fmt::Display for RuleViolation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "conformance rule `{}` broken: {}",
            self.rule, self.detail
        )
    }
}

impl std::error::Error for RuleViolation {}

/// The outcome of one rule.
pub type RuleResult = Result<(), RuleViolation>;

/// One rule of the suite.
#[derive(Clone, Copy)]
pub struct Rule {
    /// Its name, also the generated test's name.
    pub name: &'static str,
    /// Runs it against a fresh subject.
    pub run: fn(Subject) -> BoxFuture<RuleResult>,
}

impl fmt::Debug for Rule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name)
    }
}

/// The rules whose runs — one spawned task per rule of `RULES`, in the suite's order — ended
/// in a violation, in that order; each violation is printed to stderr after `label` (the
/// mutant or the correct code). A mutant's kill must break exactly its rule, so callers
/// compare the result with `[rule]`.
///
/// # Panics
/// If a rule's task panicked: a bug in the rule or the subject, never a verdict.
pub async fn broken_rules(
    label: &str,
    runs: Vec<tokio::task::JoinHandle<RuleResult>>,
) -> Vec<&'static str> {
    let mut broken = Vec::new();
    for (rule, run) in RULES.iter().zip(runs) {
        match run.await {
            Ok(Ok(())) => {}
            Ok(Err(violation)) => {
                eprintln!("{label}: {violation}");
                broken.push(violation.rule);
            }
            Err(e) => panic!("rule {} panicked: {e}", rule.name),
        }
    }
    broken
}

/// Calls `$callback!` with the name of every rule; the one list the table and the test macro
/// are both built from.
#[doc(hidden)]
#[macro_export]
macro_rules! __conformance_rules {
    ($callback:ident ! ($($args:tt)*)) => {
        $crate::$callback! { ($($args)*)
            fresh_acquire,
            renew_keeps_token_and_extends_expiry,
            release_lets_another_owner_in,
            competing_owner_gets_held,
            same_owner_reacquire_keeps_token,
            token_strictly_greater_after_release,
            token_strictly_greater_after_expiry,
            now_equal_to_expiry_is_expired,
            expired_same_owner_reacquire_gets_new_token,
            renew_after_expiry_is_held,
            renew_after_expiry_and_takeover_is_held,
            renew_after_release_is_held,
            stale_release_after_takeover_frees_nothing,
            retried_release_of_own_older_hold_frees_nothing,
            release_is_idempotent,
            unknown_release_is_a_noop,
            owner_chain_a_b_a_is_monotone,
            sessions_are_independent,
            concurrent_acquirers_one_winner,
            concurrent_takeover_after_expiry_one_winner,
        }
    };
}

#[doc(hidden)]
#[macro_export]
macro_rules! __conformance_table {
    (() $($rule:ident),* $(,)?) => {
        /// Every rule of the suite, in the order the contract lists them.
        pub const RULES: &[Rule] = &[
            $(Rule { name: stringify!($rule), run: |s| Box::pin(rules::$rule(s.for_rule(stringify!($rule)))) }),*
        ];
    };
}

__conformance_rules!(__conformance_table!());

#[doc(hidden)]
#[macro_export]
macro_rules! __conformance_test_fns {
    (($factory:expr) $($rule:ident),* $(,)?) => {
        $(
            #[test]
            fn $rule() {
                $crate::check_rule(stringify!($rule), $factory);
            }
        )*
    };
}

/// Expands into one `#[test]` per conformance rule, named after the rule, each running it
/// against a fresh [`Subject`] made by `$factory` (a closure returning a future of one).
#[macro_export]
macro_rules! conformance_tests {
    ($factory:expr) => {
        $crate::__conformance_rules!(__conformance_test_fns!($factory));
    };
}

/// Runs the rule named `name` on a fresh runtime against the subject `factory` makes, and
/// panics with the violation if the rule is broken. Used by [`conformance_tests!`].
///
/// # Panics
/// When the rule is broken or `name` is not a rule.
pub fn check_rule<F, Fut>(name: &str, factory: F)
where
    F: FnOnce() -> Fut,
    Fut: Future<Output = Subject>,
{
    let rule = RULES
        .iter()
        .find(|rule| rule.name == name)
        .unwrap_or_else(|| panic!("no conformance rule named `{name}`"));
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a tokio runtime for the conformance suite");
    if let Err(violation) = runtime.block_on(async { (rule.run)(factory().await).await }) {
        panic!("{violation}");
    }
}

/// The rules. Each takes a fresh subject and reports the first thing that breaks the rule.
pub mod rules {
    use super::*;

    /// `ensure!(rule, cond, "what happened {}", args)`: a violation of `rule` unless `cond`.
    macro_rules! ensure {
        ($rule:expr, $cond:expr, $($detail:tt)+) => {
            if !$cond {
                return Err(RuleViolation { rule: $rule, detail: format!($($detail)+) });
            }
        };
    }

    fn owner(name: &str) -> Owner {
        Owner::new(name, 0)
    }

    /// Calls that must succeed: anything else breaks `rule`.
    async fn ok<T>(
        rule: &'static str,
        what: &str,
        call: impl Future<Output = Result<T, LeaseError>>,
    ) -> Result<T, RuleViolation> {
        call.await.map_err(|e| RuleViolation {
            rule,
            detail: format!("{what} failed: {e}"),
        })
    }

    /// A call that must be refused with Held (any holder token).
    async fn held<T: fmt::Debug>(
        rule: &'static str,
        what: &str,
        call: impl Future<Output = Result<T, LeaseError>>,
    ) -> Result<Option<u64>, RuleViolation> {
        match call.await {
            Err(LeaseError::Held { holder_token }) => Ok(holder_token),
            other => Err(RuleViolation {
                rule,
                detail: format!("{what} should be refused with Held, got {other:?}"),
            }),
        }
    }

    /// Owner `who` acquires the rule's session `name`, which must be granted ([`ok`]).
    async fn acquire(
        rule: &'static str,
        t: &Subject,
        what: &str,
        (name, who): (&str, &str),
    ) -> Result<Lease, RuleViolation> {
        ok(rule, what, t.lease.acquire(&t.session(name), &owner(who))).await
    }

    /// Owner `who` acquires the rule's session `name`, which must be refused ([`held`]).
    async fn acquire_held(
        rule: &'static str,
        t: &Subject,
        what: &str,
        (name, who): (&str, &str),
    ) -> Result<Option<u64>, RuleViolation> {
        held(rule, what, t.lease.acquire(&t.session(name), &owner(who))).await
    }

    /// Owner `a` acquires `s1`, its lease expires, and owner `b` takes it over: both leases.
    async fn b_took_over(rule: &'static str, t: &Subject) -> Result<(Lease, Lease), RuleViolation> {
        let a = acquire(rule, t, "acquire by a", ("s1", "a")).await?;
        t.advance(t.ttl).await;
        let b = acquire(rule, t, "acquire by b", ("s1", "b")).await?;
        Ok((a, b))
    }

    /// `after` must carry `before`'s token.
    fn token_kept(rule: &'static str, before: &Lease, after: &Lease) -> RuleResult {
        let (before, after) = (before.token(), after.token());
        ensure!(rule, after == before, "token {before} → {after}");
        Ok(())
    }

    /// `after` must carry a token strictly greater than `before`'s.
    fn token_greater(rule: &'static str, before: &Lease, after: &Lease) -> RuleResult {
        let (before, after) = (before.token(), after.token());
        ensure!(rule, after > before, "token {before} → {after}");
        Ok(())
    }

    /// A Held refusal must name the token of `who`, who holds `lease`.
    fn names_holder(
        rule: &'static str,
        named: Option<u64>,
        who: &str,
        lease: &Lease,
    ) -> RuleResult {
        ensure!(
            rule,
            named == Some(lease.token()),
            "Held named {named:?}, {who} holds {}",
            lease.token()
        );
        Ok(())
    }

    /// The first grant of a session goes to the caller, names it and the session, and
    /// carries a positive token and a non-zero TTL.
    pub async fn fresh_acquire(t: Subject) -> RuleResult {
        const R: &str = "fresh_acquire";
        let lease = acquire(R, &t, "acquire of a fresh session", ("s1", "a")).await?;
        ensure!(
            R,
            lease.session() == &t.session("s1"),
            "granted session {}",
            lease.session()
        );
        ensure!(
            R,
            lease.owner() == &owner("a"),
            "granted to {}",
            lease.owner()
        );
        ensure!(
            R,
            lease.token() >= 1,
            "token {} (tokens start at 1)",
            lease.token()
        );
        ensure!(R, !lease.ttl().is_zero(), "granted a zero TTL");
        Ok(())
    }

    /// Renew keeps the token and moves the expiry later.
    pub async fn renew_keeps_token_and_extends_expiry(t: Subject) -> RuleResult {
        const R: &str = "renew_keeps_token_and_extends_expiry";
        let first = acquire(R, &t, "acquire", ("s1", "a")).await?;
        t.advance(t.ttl / 2).await;
        let renewed = ok(R, "renew of a live lease", t.lease.renew(&first)).await?;
        token_kept(R, &first, &renewed)?;
        ensure!(
            R,
            renewed.expiry() > first.expiry(),
            "expiry {:?} → {:?}",
            first.expiry(),
            renewed.expiry()
        );
        t.advance(t.ttl / 2 + t.ttl / 4).await;
        let what = "acquire by another owner after the old expiry but before the renewed one";
        acquire_held(R, &t, what, ("s1", "b")).await?;
        Ok(())
    }

    /// After the holder releases, another owner is let in at once.
    pub async fn release_lets_another_owner_in(t: Subject) -> RuleResult {
        const R: &str = "release_lets_another_owner_in";
        let a = acquire(R, &t, "acquire by a", ("s1", "a")).await?;
        ok(R, "release by a", t.lease.release(&a)).await?;
        acquire(R, &t, "acquire by b after a released", ("s1", "b")).await?;
        Ok(())
    }

    /// A live lease refuses another owner with Held naming the holder's token.
    pub async fn competing_owner_gets_held(t: Subject) -> RuleResult {
        const R: &str = "competing_owner_gets_held";
        let a = acquire(R, &t, "acquire by a", ("s1", "a")).await?;
        let holder = acquire_held(R, &t, "acquire by b while a holds", ("s1", "b")).await?;
        ensure!(
            R,
            holder == Some(a.token()),
            "Held named token {holder:?}, the holder has {}",
            a.token()
        );
        Ok(())
    }

    /// A live holder that acquires again keeps its token.
    pub async fn same_owner_reacquire_keeps_token(t: Subject) -> RuleResult {
        const R: &str = "same_owner_reacquire_keeps_token";
        let first = acquire(R, &t, "acquire", ("s1", "a")).await?;
        t.advance(t.ttl / 2).await;
        let again = acquire(R, &t, "re-acquire by the live holder", ("s1", "a")).await?;
        token_kept(R, &first, &again)
    }

    /// A takeover after release gets a strictly greater token, even by the same owner.
    pub async fn token_strictly_greater_after_release(t: Subject) -> RuleResult {
        const R: &str = "token_strictly_greater_after_release";
        let first = acquire(R, &t, "acquire", ("s1", "a")).await?;
        ok(R, "release", t.lease.release(&first)).await?;
        let again = acquire(R, &t, "acquire after release", ("s1", "a")).await?;
        token_greater(R, &first, &again)
    }

    /// A takeover after expiry gets a strictly greater token.
    pub async fn token_strictly_greater_after_expiry(t: Subject) -> RuleResult {
        const R: &str = "token_strictly_greater_after_expiry";
        let a = acquire(R, &t, "acquire by a", ("s1", "a")).await?;
        t.advance(t.ttl).await;
        let b = acquire(R, &t, "acquire by b after a expired", ("s1", "b")).await?;
        ensure!(
            R,
            b.token() > a.token(),
            "a had token {}, b got {}",
            a.token(),
            b.token()
        );
        Ok(())
    }

    /// At exactly `expiry` the lease is expired: another owner gets it.
    pub async fn now_equal_to_expiry_is_expired(t: Subject) -> RuleResult {
        const R: &str = "now_equal_to_expiry_is_expired";
        acquire(R, &t, "acquire by a", ("s1", "a")).await?;
        t.advance(t.ttl).await;
        acquire(R, &t, "acquire by b at a's expiry", ("s1", "b")).await?;
        Ok(())
    }

    /// An owner whose own lease expired gets a new, greater token on re-acquire.
    pub async fn expired_same_owner_reacquire_gets_new_token(t: Subject) -> RuleResult {
        const R: &str = "expired_same_owner_reacquire_gets_new_token";
        let first = acquire(R, &t, "acquire", ("s1", "a")).await?;
        t.advance(t.ttl).await;
        let again = acquire(R, &t, "re-acquire after expiry", ("s1", "a")).await?;
        token_greater(R, &first, &again)
    }

    /// An expired lease cannot be renewed, even if nobody took over.
    pub async fn renew_after_expiry_is_held(t: Subject) -> RuleResult {
        const R: &str = "renew_after_expiry_is_held";
        let a = acquire(R, &t, "acquire", ("s1", "a")).await?;
        t.advance(t.ttl).await;
        held(R, "renew after expiry", t.lease.renew(&a)).await?;
        Ok(())
    }

    /// The old holder's renew after a takeover is Held and leaves the new holder in place.
    pub async fn renew_after_expiry_and_takeover_is_held(t: Subject) -> RuleResult {
        const R: &str = "renew_after_expiry_and_takeover_is_held";
        let (a, b) = b_took_over(R, &t).await?;
        let holder = held(R, "renew by a after b took over", t.lease.renew(&a)).await?;
        names_holder(R, holder, "b", &b)?;
        ok(R, "renew by b after a's stale renew", t.lease.renew(&b)).await?;
        Ok(())
    }

    /// A released lease cannot be renewed, and the renew recreates nothing.
    pub async fn renew_after_release_is_held(t: Subject) -> RuleResult {
        const R: &str = "renew_after_release_is_held";
        let a = acquire(R, &t, "acquire", ("s1", "a")).await?;
        ok(R, "release", t.lease.release(&a)).await?;
        held(R, "renew after release", t.lease.renew(&a)).await?;
        let b = acquire(R, &t, "acquire by b after a's renew", ("s1", "b")).await?;
        token_greater(R, &a, &b)
    }

    /// The expired holder's late release does not free the new holder's lease.
    pub async fn stale_release_after_takeover_frees_nothing(t: Subject) -> RuleResult {
        const R: &str = "stale_release_after_takeover_frees_nothing";
        let (a, b) = b_took_over(R, &t).await?;
        ok(R, "stale release by a", t.lease.release(&a)).await?;
        let what = "acquire by c after a's stale release";
        let holder = acquire_held(R, &t, what, ("s1", "c")).await?;
        names_holder(R, holder, "b", &b)?;
        ok(R, "renew by b", t.lease.renew(&b)).await?;
        Ok(())
    }

    /// A release presenting the owner's own older token — the retry of a release whose reply
    /// was lost, after the owner acquired again — frees nothing of the newer hold (field case
    /// F9, etcd-io/etcd#22082: an unlock that matched the key name only).
    pub async fn retried_release_of_own_older_hold_frees_nothing(t: Subject) -> RuleResult {
        const R: &str = "retried_release_of_own_older_hold_frees_nothing";
        let first = acquire(R, &t, "acquire by a", ("s1", "a")).await?;
        ok(R, "release by a", t.lease.release(&first)).await?;
        let second = acquire(R, &t, "acquire again by a", ("s1", "a")).await?;
        token_greater(R, &first, &second)?;
        let retried = "retried release of a's first hold";
        ok(R, retried, t.lease.release(&first)).await?;
        let what = "acquire by b after a's retried release";
        let holder = acquire_held(R, &t, what, ("s1", "b")).await?;
        names_holder(R, holder, "a", &second)?;
        let renewed = ok(R, "renew of a's second hold", t.lease.renew(&second)).await?;
        token_kept(R, &second, &renewed)
    }

    /// Releasing twice succeeds both times and frees nothing the second time.
    pub async fn release_is_idempotent(t: Subject) -> RuleResult {
        const R: &str = "release_is_idempotent";
        let a = acquire(R, &t, "acquire by a", ("s1", "a")).await?;
        ok(R, "first release", t.lease.release(&a)).await?;
        let b = acquire(R, &t, "acquire by b", ("s1", "b")).await?;
        ok(R, "second release of a's lease", t.lease.release(&a)).await?;
        ok(R, "renew by b after a's second release", t.lease.renew(&b)).await?;
        Ok(())
    }

    /// Releasing a lease the authority never granted succeeds and changes nothing.
    pub async fn unknown_release_is_a_noop(t: Subject) -> RuleResult {
        const R: &str = "unknown_release_is_a_noop";
        let a = acquire(R, &t, "acquire by a", ("s1", "a")).await?;
        let forged = Lease::new(t.session("s1"), owner("z"), a.token(), a.expiry(), a.ttl());
        let what = "release of a forged lease on a held session";
        ok(R, what, t.lease.release(&forged)).await?;
        let never = Lease::new(t.session("never-used"), owner("z"), 7, a.expiry(), a.ttl());
        ok(
            R,
            "release on a session never leased",
            t.lease.release(&never),
        )
        .await?;
        ok(
            R,
            "renew by a after the unknown releases",
            t.lease.renew(&a),
        )
        .await?;
        Ok(())
    }

    /// A → B → A over expiries: every takeover's token is above the one before.
    pub async fn owner_chain_a_b_a_is_monotone(t: Subject) -> RuleResult {
        const R: &str = "owner_chain_a_b_a_is_monotone";
        let (a1, b) = b_took_over(R, &t).await?;
        ok(R, "release by b", t.lease.release(&b)).await?;
        let a2 = acquire(R, &t, "acquire by a again", ("s1", "a")).await?;
        let tokens = [a1.token(), b.token(), a2.token()];
        ensure!(
            R,
            tokens[0] < tokens[1] && tokens[1] < tokens[2],
            "tokens a, b, a: {tokens:?}"
        );
        Ok(())
    }

    /// Holding, releasing or expiring one session does not touch another.
    pub async fn sessions_are_independent(t: Subject) -> RuleResult {
        const R: &str = "sessions_are_independent";
        let a1 = acquire(R, &t, "acquire s1 by a", ("s1", "a")).await?;
        let b2 = acquire(R, &t, "acquire s2 by b while a holds s1", ("s2", "b")).await?;
        ok(R, "release s1", t.lease.release(&a1)).await?;
        ok(R, "renew s2 after s1 was released", t.lease.renew(&b2)).await?;
        acquire_held(R, &t, "acquire s2 by c", ("s2", "c")).await?;
        Ok(())
    }

    /// Sixteen owners acquire one session at once: exactly one wins, the rest get Held
    /// naming the winner's token.
    pub async fn concurrent_acquirers_one_winner(t: Subject) -> RuleResult {
        const R: &str = "concurrent_acquirers_one_winner";
        one_winner(R, &t, &t.session("s1")).await?;
        Ok(())
    }

    /// Sixteen owners take one expired lease over at once: exactly one wins, with a token
    /// above the expired one, and the rest get Held naming it. (A fresh session is won by a
    /// create, which no two callers can both make; a takeover is an update, where a backend
    /// must still compare-and-set — e.g. a Kubernetes update must carry its resourceVersion.)
    pub async fn concurrent_takeover_after_expiry_one_winner(t: Subject) -> RuleResult {
        const R: &str = "concurrent_takeover_after_expiry_one_winner";
        let first = acquire(R, &t, "acquire by a", ("s1", "a")).await?;
        t.advance(t.ttl).await;
        let winner = one_winner(R, &t, &t.session("s1")).await?;
        ensure!(
            R,
            winner.token() > first.token(),
            "the expired lease had token {}, the takeover got {}",
            first.token(),
            winner.token()
        );
        Ok(())
    }
    /// Sixteen owners acquire `session` at once; exactly one may win, and every loser must be
    /// refused with Held naming the winner's token. Returns the winner's lease.
    async fn one_winner(
        rule: &'static str,
        t: &Subject,
        session: &SessionId,
    ) -> Result<Lease, RuleViolation> {
        const N: usize = 16;
        let barrier = Arc::new(tokio::sync::Barrier::new(N));
        let calls: Vec<_> = (0..N)
            .map(|i| {
                let (lease, barrier, session) = (t.lease.clone(), barrier.clone(), session.clone());
                tokio::spawn(async move {
                    barrier.wait().await;
                    lease.acquire(&session, &owner(&format!("o{i}"))).await
                })
            })
            .collect();
        let mut results = Vec::with_capacity(N);
        for call in calls {
            results.push(call.await.map_err(|e| RuleViolation {
                rule,
                detail: format!("acquirer task failed: {e}"),
            })?);
        }
        let winners: Vec<&Lease> = results.iter().filter_map(|r| r.as_ref().ok()).collect();
        ensure!(
            rule,
            winners.len() == 1,
            "{} winners: {winners:?}",
            winners.len()
        );
        let winner = winners[0].clone();
        let refused_right = results
            .iter()
            .filter(|r| matches!(r, Err(LeaseError::Held { holder_token }) if *holder_token == Some(winner.token())))
            .count();
        ensure!(
            rule,
            refused_right == N - 1,
            "only {refused_right} of {} losers got Held with the winner's token: {results:?}",
            N - 1
        );
        Ok(winner)
    }
}
