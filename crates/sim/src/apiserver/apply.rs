//! What a server-side apply body must be, and the object it makes
//! (docs/apiserver.md#server-side-apply). The ownership rules are [`super::managed`]'s.

use k8s_openapi::api::coordination::v1::Lease;
use serde_json::Value;

use super::managed::API_VERSION;
use super::{ApiError, ObjectKey, key_in};

/// Refuses an apply configuration the real server refuses before it merges: not an object, an
/// `apiVersion` other than `coordination.k8s.io/v1` (k8s.io/apimachinery
/// `pkg/util/managedfields/internal/structuredmerge.go`: "Incorrect version specified in
/// apply patch"), a `kind` other than `Lease`, or a `metadata.managedFields` ("metadata.
/// managedFields must be nil", the same file).
///
/// # Errors
/// 400 naming what is wrong.
pub(super) fn check_config(config: &Value) -> Result<(), ApiError> {
    if !config.is_object() {
        return Err(ApiError::bad_request(
            "an apply patch must be an object (a Lease configuration)".into(),
        ));
    }
    let version = config.get("apiVersion").and_then(Value::as_str);
    if version != Some(API_VERSION) {
        return Err(ApiError::bad_request(format!(
            "Incorrect version specified in apply patch. Specified patch version: {}, \
             expected: {API_VERSION}",
            version.unwrap_or("")
        )));
    }
    let kind = config.get("kind").and_then(Value::as_str);
    if kind != Some("Lease") {
        return Err(ApiError::bad_request(format!(
            "the kind in the apply patch ({}) is not Lease: this resource serves Lease objects",
            kind.unwrap_or("")
        )));
    }
    if config
        .pointer("/metadata/managedFields")
        .is_some_and(|fields| !fields.is_null())
    {
        return Err(ApiError::bad_request(
            "metadata.managedFields must be nil".into(),
        ));
    }
    Ok(())
}

/// The applied `object` as the Lease `key`: its name must be the URL's, as the real server's
/// `checkName` requires of every patch result (k8s.io/apiserver
/// `pkg/endpoints/handlers/patch.go`), so an apply that creates must name the object.
///
/// # Errors
/// 400 when the result is not a Lease or names another object or namespace.
pub(super) fn to_lease(key: &ObjectKey, object: Value) -> Result<Lease, ApiError> {
    let lease: Lease = serde_json::from_value(object)
        .map_err(|e| ApiError::bad_request(format!("the applied object is not a Lease: {e}")))?;
    let name = lease.metadata.name.as_deref().unwrap_or("");
    if name != key.name {
        return Err(ApiError::bad_request(format!(
            "the name of the object ({name}) does not match the name on the URL ({})",
            key.name
        )));
    }
    key_in(&key.namespace, &lease)?;
    Ok(lease)
}
