//! JSON merge patch (RFC 7386) of a stored Lease: what `PATCH` with
//! `application/merge-patch+json` applies (and, for a Lease, whose spec has no lists, what a
//! strategic merge patch applies too).

use k8s_openapi::api::coordination::v1::Lease;
use serde_json::Value;

use super::ApiError;

/// `stored` with `patch` merged in: objects merge key by key, `null` removes a key, anything
/// else replaces.
///
/// # Errors
/// 400 when the patch is not an object or the result is not a Lease.
pub(super) fn merge(stored: &Lease, patch: &Value) -> Result<Lease, ApiError> {
    if !patch.is_object() {
        return Err(ApiError::bad_request(
            "a merge patch must be a JSON object".into(),
        ));
    }
    let mut target = serde_json::to_value(stored)
        .map_err(|e| ApiError::server_error(500, format!("cannot encode the stored Lease: {e}")))?;
    merge_value(&mut target, patch);
    serde_json::from_value(target)
        .map_err(|e| ApiError::bad_request(format!("the patched object is not a Lease: {e}")))
}

pub(super) fn merge_value(target: &mut Value, patch: &Value) {
    let Value::Object(changes) = patch else {
        *target = patch.clone();
        return;
    };
    if !target.is_object() {
        *target = Value::Object(serde_json::Map::new());
    }
    let Value::Object(fields) = target else {
        return;
    };
    for (key, change) in changes {
        if change.is_null() {
            fields.remove(key);
        } else {
            merge_value(fields.entry(key.clone()).or_insert(Value::Null), change);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn merge_replaces_removes_and_keeps_keys() {
        let mut target = serde_json::json!({"a": 1, "b": {"c": 2, "d": 3}, "e": 4});
        merge_value(
            &mut target,
            &serde_json::json!({"a": 9, "b": {"c": null}, "f": [1]}),
        );
        assert_eq!(
            target,
            serde_json::json!({"a": 9, "b": {"d": 3}, "e": 4, "f": [1]})
        );
    }
}
