//! A Kubernetes API server for Lease objects (`coordination.k8s.io/v1`), small enough to run
//! on a simulated host and exact where leases depend on it: the world's `apiserver` host
//! (docs/backends.md#kubelease). It runs on any [`Incoming`] — turmoil TCP in the world,
//! tokio TCP or an in-memory transport in tests — and keeps its objects on any [`Storage`].
//!
//! # What it serves
//! HTTP/1.1, JSON bodies as k8s-openapi's `Lease` and `Status`, under
//! `/apis/coordination.k8s.io/v1/namespaces/{namespace}/leases`:
//!
//! | request | answer |
//! |---|---|
//! | `GET …/leases` | 200 `LeaseList` (every object of the namespace, by name) |
//! | `POST …/leases` | 201 the created object · 409 `AlreadyExists` · 400 with a `resourceVersion` set |
//! | `GET …/leases/{name}` | 200 the object · 404 `NotFound` |
//! | `PUT …/leases/{name}` | 200 the replaced object · 409 `Conflict` when `metadata.resourceVersion` differs from the stored one · 422 `Invalid` without a `resourceVersion` (see below) · on a missing name: 201 created without a `resourceVersion`, 404 with one |
//! | `PATCH …/leases/{name}` | merge patch (`application/merge-patch+json`, or the strategic one, the same for a Lease): 200 · 404 · 409 when the patch carries a `metadata.resourceVersion` that differs |
//! | `PATCH …/leases/{name}` server-side apply (`application/apply-patch+yaml`, a JSON body; `fieldManager` required, `force`) | 200 · 201 created · 409 `Conflict` with a `FieldManagerConflict` cause per field another manager owns, or a stale `metadata.resourceVersion` · 422 without `fieldManager` (docs/apiserver.md#server-side-apply) |
//! | anything else | 415 `UnsupportedMediaType` (JSON patch, YAML beyond JSON) · 405 `MethodNotAllowed` (another method, a watch), naming docs/apiserver.md#not-served |
//! | `DELETE …/leases/{name}` | 200 `Status` Success · 404 · 409 when `DeleteOptions.preconditions` (`resourceVersion`, `uid`) do not hold |
//!
//! Refusals carry a `Status` body (`kind: Status`, `status: Failure`, `reason`, `code`,
//! `message`, `details`) with a real server's texts ([`ApiError`]). Every accepted write
//! keeps `metadata.managedFields` per manager and operation, without `time`
//! (docs/apiserver.md#managedfields).
//!
//! # resourceVersion
//! One durable global counter: every accepted write (create, replace, patch, delete) takes the
//! next value; an object's `metadata.resourceVersion` is the value of its last write. A
//! replace of a Lease **must** carry one: the Lease registry strategy of the real API server
//! has `AllowUnconditionalUpdate() == false` (k8s.io/kubernetes
//! `pkg/registry/coordination/lease/strategy.go`), so a PUT without it is refused 422
//! ("metadata.resourceVersion: must be specified for an update"), while `AllowCreateOnUpdate()
//! == true` lets a PUT without it create a missing object. An update with no precondition is a
//! merge patch (what some Rust lease crates send). Every write is synced before the reply
//! ([`store`]), so objects and counter survive a crash; a restarted server reloads them.
//!
//! # Left out
//! Watches (405), `generateName`, field and label selectors, JSON patch (415), `dryRun`
//! (refused 400), `creationTimestamp` and `managedFields` times (no clock is read: the
//! server judges no time), a no-op update keeping its `resourceVersion` (every accepted write
//! takes a new one), admission and RBAC.
//!
//! # The world's hooks
//! [`ApiServerConfig::on_write`] is told each accepted write ([`AcceptedWrite`]) — the world
//! turns it into a history `write` line; nothing is recorded without it.
//! [`ApiServerConfig::faults`] are the nemesis's error windows (`authority_errors`): a request
//! from a caller a window covers is answered with the window's HTTP status and its documented
//! body (500, 503, 403, 409, 422, 429, 504; docs/apiserver.md#error-windows) and nothing is
//! applied.

mod apply;
mod http;
mod managed;
mod patch;
mod status;
pub mod store;

use std::fmt;
use std::sync::Arc;

use k8s_openapi::api::coordination::v1::Lease;
use serde_json::Value;

use self::managed::Managers;
pub use self::status::ApiError;
pub use self::store::ObjectKey;
use self::store::{Change, Store};
use super::errors::ErrorWindows;
use leasesim_core::hooks::{HookSlot, PausePoint};
use leasesim_core::storage::{Storage, StorageError};
use leasesim_history::WriteVerb;
use leasesim_net::Incoming;

/// The annotation naming the session a Lease object leases (the history's `session`), as
/// leasesim's kube client writes it; an object without it is recorded under its name.
pub use leasesim_kube::SESSION_ANNOTATION;

/// One write the server accepted, as [`ApiServerConfig::on_write`] is told it.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct AcceptedWrite {
    /// The object's namespace.
    pub namespace: String,
    /// `metadata.name`.
    pub object: String,
    /// The [`SESSION_ANNOTATION`] of the object (its name when absent).
    pub session: String,
    /// What was written.
    pub verb: WriteVerb,
    /// `spec.holderIdentity` after the write, `""` when empty or absent (and after a delete).
    pub holder_identity: String,
    /// `spec.leaseTransitions` after the write (0 when absent; a delete: the deleted
    /// object's).
    pub transitions: u64,
    /// The `resourceVersion` the write produced (a delete: the deleted object's).
    pub resource_version: u64,
}

/// Called with each accepted write, after it is durable and before the reply.
pub type WriteSink = Arc<dyn Fn(AcceptedWrite) + Send + Sync>;

/// Settings of an [`ApiServer`].
#[derive(Clone, Default)]
#[non_exhaustive]
pub struct ApiServerConfig {
    /// Told each accepted write (none by default).
    pub on_write: Option<WriteSink>,
    /// The error windows (none open by default).
    pub faults: ErrorWindows,
    /// Harness hooks: each request reaches [`PausePoint::ServiceHandlerStart`] before it is
    /// handled (none by default).
    pub hooks: HookSlot,
}

impl fmt::Debug for ApiServerConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ApiServerConfig")
            .field("on_write", &self.on_write.as_ref().map(|_| "…"))
            .field("faults", &self.faults)
            .field("hooks", &self.hooks)
            .finish()
    }
}

impl ApiServerConfig {
    /// Tells `sink` each accepted write.
    pub fn with_write_sink(mut self, sink: WriteSink) -> Self {
        self.on_write = Some(sink);
        self
    }

    /// Calls `hooks` at the start of each request.
    pub fn with_hooks(mut self, hooks: HookSlot) -> Self {
        self.hooks = hooks;
        self
    }

    /// Answers the error windows of `faults`.
    pub fn with_faults(mut self, faults: ErrorWindows) -> Self {
        self.faults = faults;
        self
    }
}

/// The API server: durable Lease objects and the rules of the Lease API.
#[derive(Debug)]
pub struct ApiServer {
    store: Store,
    config: ApiServerConfig,
}

/// `DeleteOptions.preconditions`.
#[derive(Clone, PartialEq, Eq, Debug, Default)]
pub struct Preconditions {
    /// The `resourceVersion` the object must have.
    pub resource_version: Option<String>,
    /// The `uid` the object must have.
    pub uid: Option<String>,
}

impl ApiServer {
    /// Opens the server's objects on `storage` (creating them when new).
    ///
    /// # Errors
    /// Storage errors; [`StorageError::Corrupt`] for stored data this code did not write.
    pub async fn open(
        storage: Arc<dyn Storage>,
        config: ApiServerConfig,
    ) -> Result<Self, StorageError> {
        Ok(ApiServer {
            store: Store::open(storage).await?,
            config,
        })
    }

    /// Serves HTTP/1.1 on every connection of `incoming` until it ends.
    ///
    /// # Errors
    /// When accepting a connection fails.
    pub async fn serve(self: Arc<Self>, incoming: Incoming) -> std::io::Result<()> {
        http::serve(self, incoming).await
    }

    /// The `resourceVersion` of the last accepted write (0 before the first).
    pub async fn resource_version(&self) -> u64 {
        self.store.lock().await.last_rv
    }

    /// Where every request starts: the handler's pause point.
    pub(crate) async fn handler_start(&self) {
        self.config
            .hooks
            .pause_point(PausePoint::ServiceHandlerStart)
            .await;
    }

    /// Refuses a request from host `peer` that an error window covers, with its status
    /// (docs/apiserver.md#error-windows); `read`: the request is a GET, which a 409 or 422
    /// window lets through; `name`: the object the path names.
    pub(crate) fn check_faults(
        &self,
        peer: Option<&str>,
        read: bool,
        name: Option<&str>,
    ) -> Result<(), ApiError> {
        match self.config.faults.answer_for(peer) {
            Some(status) if !read || status.answers_reads() => {
                Err(ApiError::from_window(status, name))
            }
            _ => Ok(()),
        }
    }

    /// The object `key`.
    ///
    /// # Errors
    /// 404 when missing; an error window's status.
    pub async fn get(&self, key: &ObjectKey) -> Result<Lease, ApiError> {
        let state = self.store.lock().await;
        state
            .objects
            .get(key)
            .cloned()
            .ok_or_else(|| ApiError::not_found(key))
    }

    /// Every object of `namespace`, by name, and the current `resourceVersion`.
    ///
    /// # Errors
    /// A fault window's 5xx.
    pub async fn list(&self, namespace: &str) -> Result<(Vec<Lease>, u64), ApiError> {
        let state = self.store.lock().await;
        let items = state
            .objects
            .iter()
            .filter(|(key, _)| key.namespace == namespace)
            .map(|(_, lease)| lease.clone())
            .collect();
        Ok((items, state.last_rv))
    }

    /// Creates `lease` in `namespace` (POST), its fields owned by `manager`'s `Update` entry.
    ///
    /// # Errors
    /// 400 with a `resourceVersion` set or another namespace in the body; 422 for an invalid
    /// object; 409 `AlreadyExists`; an error window's status.
    pub async fn create(
        &self,
        namespace: &str,
        mut lease: Lease,
        manager: &str,
    ) -> Result<Lease, ApiError> {
        let key = key_in(namespace, &lease)?;
        if lease.metadata.resource_version.is_some() {
            return Err(ApiError::bad_request(
                "resourceVersion should not be set on objects to be created".into(),
            ));
        }
        validate(&lease)?;
        let mut state = self.store.lock().await;
        if state.objects.contains_key(&key) {
            return Err(ApiError::already_exists(&key));
        }
        let rv = state.last_rv + 1;
        lease.metadata.uid = Some(uid_for(rv));
        let lease = updated_by(manager, None, lease)?;
        self.put(&mut state, &key, rv, lease, WriteVerb::Create)
            .await
    }

    /// Replaces the object `key` with `lease` (PUT) for `manager` (who takes the fields it
    /// changes); returns it and whether it was created.
    ///
    /// # Errors
    /// 400 when the body names another object; 422 invalid or without `resourceVersion`;
    /// 409 `Conflict` when its `resourceVersion` (or `uid`) is not the stored one; 404 for a
    /// missing object with a `resourceVersion`; an error window's status.
    pub async fn replace(
        &self,
        key: &ObjectKey,
        mut lease: Lease,
        manager: &str,
    ) -> Result<(Lease, bool), ApiError> {
        if key_in(&key.namespace, &lease)? != *key {
            return Err(ApiError::bad_request(format!(
                "the name of the object ({}) does not match the name on the URL ({})",
                lease.metadata.name.as_deref().unwrap_or(""),
                key.name
            )));
        }
        validate(&lease)?;
        let mut state = self.store.lock().await;
        let rv = state.last_rv + 1;
        let Some(stored) = state.objects.get(key) else {
            if lease.metadata.resource_version.is_some() {
                return Err(ApiError::not_found(key));
            }
            lease.metadata.uid = Some(uid_for(rv));
            let lease = updated_by(manager, None, lease)?;
            let created = self
                .put(&mut state, key, rv, lease, WriteVerb::Create)
                .await?;
            return Ok((created, true));
        };
        let Some(expected) = lease.metadata.resource_version.as_deref() else {
            return Err(ApiError::invalid(
                &key.name,
                "metadata.resourceVersion: Invalid value: 0x0: must be specified for an update",
            ));
        };
        check_resource_version(key, stored, expected)?;
        if let Some(uid) = &lease.metadata.uid
            && stored.metadata.uid.as_ref() != Some(uid)
        {
            return Err(ApiError::conflict(
                key,
                "the UID in the object does not match the stored one",
            ));
        }
        lease.metadata.uid = stored.metadata.uid.clone();
        let lease = updated_by(manager, Some(stored), lease)?;
        let replaced = self
            .put(&mut state, key, rv, lease, WriteVerb::Update)
            .await?;
        Ok((replaced, false))
    }

    /// Applies a JSON merge patch (RFC 7386) to the object `key` (PATCH) for `manager` (who
    /// takes the fields it changes). A `metadata.resourceVersion` in the patch is a
    /// precondition; without one the patch is unconditional.
    ///
    /// # Errors
    /// 404 missing; 409 `Conflict` on a failed precondition; 400/422 when the result is not a
    /// valid Lease of that name; an error window's status.
    pub async fn patch(
        &self,
        key: &ObjectKey,
        patch: &Value,
        manager: &str,
    ) -> Result<Lease, ApiError> {
        let mut state = self.store.lock().await;
        let stored = state
            .objects
            .get(key)
            .ok_or_else(|| ApiError::not_found(key))?;
        if let Some(expected) = patch
            .pointer("/metadata/resourceVersion")
            .and_then(Value::as_str)
        {
            check_resource_version(key, stored, expected)?;
        }
        let mut lease = patch::merge(stored, patch)?;
        if key_in(&key.namespace, &lease)? != *key {
            return Err(ApiError::bad_request(format!(
                "a patch cannot rename the object {} (or move it to another namespace)",
                key.name
            )));
        }
        validate(&lease)?;
        lease.metadata.uid = stored.metadata.uid.clone();
        let lease = updated_by(manager, Some(stored), lease)?;
        let rv = state.last_rv + 1;
        self.put(&mut state, key, rv, lease, WriteVerb::Update)
            .await
    }

    /// Server-side apply of `config` to the object `key` for `manager`
    /// (docs/apiserver.md#server-side-apply): creates the object when missing; returns it and
    /// whether it was created. A `metadata.resourceVersion` in `config` is a precondition.
    ///
    /// # Errors
    /// 400 for a configuration that is not a Lease of `coordination.k8s.io/v1`, carries
    /// `managedFields` or names another object (a create without a name too); 409 `Conflict`
    /// with a `FieldManagerConflict` cause per field when `force` is false and the apply
    /// changes fields another manager owns, and on a failed precondition; 404 for a missing
    /// object with a `resourceVersion`; 422 invalid; an error window's status.
    pub async fn apply(
        &self,
        key: &ObjectKey,
        config: &Value,
        manager: &str,
        force: bool,
    ) -> Result<(Lease, bool), ApiError> {
        apply::check_config(config)?;
        let mut state = self.store.lock().await;
        let stored = state.objects.get(key).cloned();
        let live = stored.as_ref().map_or(Ok(Value::Null), to_value)?;
        let mut managers = Managers::decode(
            stored
                .as_ref()
                .and_then(|s| s.metadata.managed_fields.as_deref()),
        );
        let object = managers
            .apply(manager, &live, config, force)
            .map_err(|conflicts| ApiError::apply_conflict(&conflicts))?;
        let precondition = config
            .pointer("/metadata/resourceVersion")
            .and_then(Value::as_str);
        let mut lease = apply::to_lease(key, object)?;
        validate(&lease)?;
        lease.metadata.managed_fields = managers.encode();
        let rv = state.last_rv + 1;
        let (verb, uid) = match (&stored, precondition) {
            (None, Some(_)) => return Err(ApiError::not_found(key)),
            (None, None) => (WriteVerb::Create, uid_for(rv)),
            (Some(stored), expected) => {
                if let Some(expected) = expected {
                    check_resource_version(key, stored, expected)?;
                }
                (
                    WriteVerb::Update,
                    stored.metadata.uid.clone().unwrap_or_default(),
                )
            }
        };
        lease.metadata.uid = Some(uid);
        let applied = self.put(&mut state, key, rv, lease, verb).await?;
        Ok((applied, verb == WriteVerb::Create))
    }

    /// Deletes the object `key` (DELETE), if `preconditions` hold; returns the uid it had.
    ///
    /// # Errors
    /// 404 missing; 409 `Conflict` on a failed precondition; an error window's status.
    pub async fn delete(
        &self,
        key: &ObjectKey,
        preconditions: &Preconditions,
    ) -> Result<Option<String>, ApiError> {
        let mut state = self.store.lock().await;
        let stored = state
            .objects
            .get(key)
            .ok_or_else(|| ApiError::not_found(key))?;
        check_preconditions(key, stored, preconditions)?;
        let write = accepted(key, stored, WriteVerb::Delete);
        let uid = stored.metadata.uid.clone();
        let rv = state.last_rv + 1;
        self.store
            .apply(&mut state, key, rv, Change::Delete)
            .await
            .map_err(|why| ApiError::server_error(500, why))?;
        self.record(AcceptedWrite {
            holder_identity: String::new(),
            ..write
        });
        Ok(uid)
    }

    async fn put(
        &self,
        state: &mut store::State,
        key: &ObjectKey,
        rv: u64,
        mut lease: Lease,
        verb: WriteVerb,
    ) -> Result<Lease, ApiError> {
        lease.metadata.namespace = Some(key.namespace.clone());
        lease.metadata.resource_version = Some(rv.to_string());
        self.store
            .apply(state, key, rv, Change::Put(Box::new(lease.clone())))
            .await
            .map_err(|why| ApiError::server_error(500, why))?;
        self.record(accepted(key, &lease, verb));
        Ok(lease)
    }

    fn record(&self, write: AcceptedWrite) {
        if let Some(sink) = &self.config.on_write {
            sink(write);
        }
    }
}

/// The key of `lease` in `namespace`: its name, and a namespace in the body must match.
fn key_in(namespace: &str, lease: &Lease) -> Result<ObjectKey, ApiError> {
    if let Some(body_ns) = &lease.metadata.namespace
        && body_ns != namespace
    {
        return Err(ApiError::bad_request(format!(
            "the namespace of the provided object ({body_ns}) does not match the namespace sent \
             on the request ({namespace})"
        )));
    }
    let name = lease.metadata.name.clone().unwrap_or_default();
    if name.is_empty() {
        return Err(ApiError::invalid(
            "",
            "metadata.name: Required value: name is required",
        ));
    }
    Ok(ObjectKey {
        namespace: namespace.to_owned(),
        name,
    })
}

/// The Lease validation a real server applies that matters here: the name is a DNS-1123
/// subdomain, `leaseDurationSeconds` is positive and `leaseTransitions` non-negative.
fn validate(lease: &Lease) -> Result<(), ApiError> {
    let name = lease.metadata.name.as_deref().unwrap_or("");
    if !is_dns_subdomain(name) {
        return Err(ApiError::invalid(
            name,
            "metadata.name: Invalid value: a lowercase RFC 1123 subdomain must consist of lower \
             case alphanumeric characters, '-' or '.', and must start and end with an \
             alphanumeric character (at most 253 characters)",
        ));
    }
    let spec = lease.spec.as_ref();
    if let Some(seconds) = spec.and_then(|s| s.lease_duration_seconds)
        && seconds <= 0
    {
        return Err(ApiError::invalid(
            name,
            &format!("spec.leaseDurationSeconds: Invalid value: {seconds}: must be greater than 0"),
        ));
    }
    if let Some(transitions) = spec.and_then(|s| s.lease_transitions)
        && transitions < 0
    {
        return Err(ApiError::invalid(
            name,
            &format!(
                "spec.leaseTransitions: Invalid value: {transitions}: must be greater than or \
                 equal to 0"
            ),
        ));
    }
    Ok(())
}

fn is_dns_subdomain(name: &str) -> bool {
    let ok_char = |c: char| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' || c == '.';
    let alnum = |c: Option<char>| c.is_some_and(|c| c.is_ascii_lowercase() || c.is_ascii_digit());
    !name.is_empty()
        && name.len() <= 253
        && name.chars().all(ok_char)
        && alnum(name.chars().next())
        && alnum(name.chars().last())
}

fn check_resource_version(key: &ObjectKey, stored: &Lease, expected: &str) -> Result<(), ApiError> {
    if stored.metadata.resource_version.as_deref() == Some(expected) {
        return Ok(());
    }
    Err(ApiError::conflict(
        key,
        "the object has been modified; please apply your changes to the latest version and try \
         again",
    ))
}

fn check_preconditions(
    key: &ObjectKey,
    stored: &Lease,
    preconditions: &Preconditions,
) -> Result<(), ApiError> {
    let (given, meta) = (preconditions, &stored.metadata);
    let rv = (
        given.resource_version.as_deref(),
        meta.resource_version.as_deref(),
    );
    check_precondition(key, "ResourceVersion", rv)?;
    check_precondition(key, "UID", (given.uid.as_deref(), meta.uid.as_deref()))
}

/// A precondition on the `field` (`ResourceVersion`, `UID`) of the stored object's metadata,
/// as `(given, stored)` (stored: empty when unset): a conflict naming both values when one is
/// given and differs.
fn check_precondition(
    key: &ObjectKey,
    field: &str,
    (given, stored): (Option<&str>, Option<&str>),
) -> Result<(), ApiError> {
    let stored = stored.unwrap_or("");
    match given {
        Some(given) if given != stored => Err(ApiError::conflict(
            key,
            &format!(
                "Precondition failed: {field} in precondition: {given}, {field} in object meta: \
                 {stored}"
            ),
        )),
        _ => Ok(()),
    }
}

/// `lease` as JSON.
fn to_value(lease: &Lease) -> Result<Value, ApiError> {
    serde_json::to_value(lease)
        .map_err(|e| ApiError::server_error(500, format!("cannot encode a Lease: {e}")))
}

/// `lease` after an update by `manager` from `stored` (`None`: a create): the fields it
/// changed move to `manager`'s `Update` entry (docs/apiserver.md#managedfields). A
/// `managedFields` in the body is not taken (the stored record is kept).
fn updated_by(manager: &str, stored: Option<&Lease>, mut lease: Lease) -> Result<Lease, ApiError> {
    let entries = stored.and_then(|s| s.metadata.managed_fields.as_deref());
    let mut managers = Managers::decode(entries);
    let old = stored.map_or(Ok(Value::Null), to_value)?;
    managers.update(manager, &old, &to_value(&lease)?);
    lease.metadata.managed_fields = managers.encode();
    Ok(lease)
}

/// A deterministic uid (the server reads no randomness): derived from the object's first
/// `resourceVersion`, which is unique.
fn uid_for(rv: u64) -> String {
    format!("00000000-0000-4000-8000-{rv:012x}")
}

fn accepted(key: &ObjectKey, lease: &Lease, verb: WriteVerb) -> AcceptedWrite {
    let (holder_identity, transitions) = leasesim_kube::holder_fields(lease);
    let session = lease
        .metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get(SESSION_ANNOTATION).cloned())
        .unwrap_or_else(|| key.name.clone());
    AcceptedWrite {
        namespace: key.namespace.clone(),
        object: key.name.clone(),
        session,
        verb,
        holder_identity,
        transitions,
        resource_version: lease
            .metadata
            .resource_version
            .as_deref()
            .and_then(|rv| rv.parse().ok())
            .unwrap_or(0),
    }
}
