//! The API server's refusals as Kubernetes `Status` objects (`kind: Status`, `status:
//! Failure`), with the codes, reasons and messages a real API server sends
//! (k8s.io/apimachinery `errors.New*`).

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Status, StatusCause, StatusDetails};

use super::managed::{Conflict, field_string};
use super::store::ObjectKey;
use crate::schedule::ErrorStatus;

/// The resource's qualified name in messages (`leases.coordination.k8s.io`).
const QUALIFIED: &str = "leases.coordination.k8s.io";

/// A refused request: the HTTP status code and the `Status` body that goes with it.
#[derive(Clone, PartialEq, Debug)]
pub struct ApiError {
    /// HTTP status code (404, 409, 422, 500…).
    pub code: u16,
    /// `Status.reason` (`NotFound`, `AlreadyExists`, `Conflict`, `Invalid`, `BadRequest`,
    /// `MethodNotAllowed`, `UnsupportedMediaType`, `InternalError`, `ServiceUnavailable`).
    pub reason: &'static str,
    /// `Status.message`.
    pub message: String,
    /// `Status.details`: the object's name, group and kind, and the causes.
    pub details: Option<Box<StatusDetails>>,
}

impl ApiError {
    fn new(code: u16, reason: &'static str, message: String, name: Option<&str>) -> Self {
        ApiError {
            code,
            reason,
            message,
            details: name.map(|name| Box::new(details(name))),
        }
    }

    /// 404: no object of that name.
    pub fn not_found(key: &ObjectKey) -> Self {
        let message = format!("{QUALIFIED} \"{}\" not found", key.name);
        Self::new(404, "NotFound", message, Some(&key.name))
    }

    /// 404: a path this server does not serve.
    pub fn no_route(path: &str) -> Self {
        let message = format!(
            "the server could not find the requested resource ({path}; this API server serves \
             only /apis/coordination.k8s.io/v1/namespaces/{{namespace}}/leases[/{{name}}])"
        );
        Self::new(404, "NotFound", message, None)
    }

    /// 409: a create of a name that exists.
    pub fn already_exists(key: &ObjectKey) -> Self {
        let message = format!("{QUALIFIED} \"{}\" already exists", key.name);
        Self::new(409, "AlreadyExists", message, Some(&key.name))
    }

    /// 409: the `resourceVersion` (or uid) precondition does not hold.
    pub fn conflict(key: &ObjectKey, why: &str) -> Self {
        let message = format!(
            "Operation cannot be fulfilled on {QUALIFIED} \"{}\": {why}",
            key.name
        );
        Self::new(409, "Conflict", message, Some(&key.name))
    }

    /// 422: the object fails validation.
    pub fn invalid(name: &str, field_errors: &str) -> Self {
        let message = format!("Lease.coordination.k8s.io \"{name}\" is invalid: {field_errors}");
        Self::new(422, "Invalid", message, Some(name))
    }

    /// 400: the request cannot be understood (bad JSON, a name that does not match the URL).
    pub fn bad_request(message: String) -> Self {
        Self::new(400, "BadRequest", message, None)
    }

    /// 422: the `PatchOptions` of a PATCH are invalid (an apply without `fieldManager`), in
    /// the real server's words (k8s.io/apimachinery `pkg/apis/meta/v1/validation`
    /// `ValidatePatchOptions`, refused as `Invalid` by k8s.io/apiserver
    /// `pkg/endpoints/handlers/patch.go`).
    pub fn invalid_patch_options(field: &str, reason: &str, detail: &str) -> Self {
        let message = format!("PatchOptions.meta.k8s.io \"\" is invalid: {field}: {detail}");
        let cause = StatusCause {
            field: Some(field.to_owned()),
            message: Some(detail.to_owned()),
            reason: Some(reason.to_owned()),
        };
        ApiError {
            code: 422,
            reason: "Invalid",
            message,
            details: Some(Box::new(StatusDetails {
                group: Some("meta.k8s.io".to_owned()),
                kind: Some("PatchOptions".to_owned()),
                causes: Some(vec![cause]),
                ..StatusDetails::default()
            })),
        }
    }

    /// 409: a non-forced apply changes fields other managers own; one `FieldManagerConflict`
    /// cause per field, in the real server's words (k8s.io/apimachinery
    /// `pkg/util/managedfields/internal/conflict.go`, `errors.NewApplyConflict`).
    pub(crate) fn apply_conflict(conflicts: &[Conflict]) -> Self {
        // The real server sorts by its encoded manager, whose first member is the name.
        let mut conflicts = conflicts.to_vec();
        conflicts.sort_by(|a, b| {
            (&a.manager.name, a.manager.operation, &a.field).cmp(&(
                &b.manager.name,
                b.manager.operation,
                &b.field,
            ))
        });
        let conflicts = conflicts.as_slice();
        let causes = conflicts
            .iter()
            .map(|c| StatusCause {
                field: Some(field_string(&c.field)),
                message: Some(format!("conflict with {}", c.manager)),
                reason: Some("FieldManagerConflict".to_owned()),
            })
            .collect();
        ApiError {
            code: 409,
            reason: "Conflict",
            message: conflict_message(conflicts),
            details: Some(Box::new(StatusDetails {
                causes: Some(causes),
                ..StatusDetails::default()
            })),
        }
    }

    /// 405: a request this server does not serve on this path (a method, or a watch); the
    /// message names what is missing and the page that says how to add it.
    pub fn method_not_allowed(what: &str) -> Self {
        let message = format!(
            "the server does not allow this method on the requested resource ({what}): this \
             API server serves GET and POST on …/leases and GET, PUT, PATCH and DELETE on \
             …/leases/{{name}}, no watch; docs/apiserver.md#adding-a-request says how to add \
             a request"
        );
        Self::new(405, "MethodNotAllowed", message, None)
    }

    /// 415: a patch type (or an apply body) this server does not take; the message names it
    /// and the page that says how to add it.
    pub fn unsupported_media_type(content_type: &str) -> Self {
        let message = format!(
            "the body of the request was in an unknown format ({content_type}): this API \
             server applies application/apply-patch+yaml (a JSON body only), \
             application/merge-patch+json and application/strategic-merge-patch+json; JSON \
             patch and YAML beyond JSON are not served, docs/apiserver.md#adding-a-patch-type \
             says how to add them"
        );
        Self::new(415, "UnsupportedMediaType", message, None)
    }

    /// 500, 503 or 403 (broken storage, or an error window of one of them), nothing applied.
    pub fn server_error(code: u16, message: String) -> Self {
        let reason = match code {
            503 => "ServiceUnavailable",
            403 => "Forbidden",
            _ => "InternalError",
        };
        Self::new(code, reason, message, None)
    }

    /// The answer of an `authority_errors` window of `status` to a request naming object
    /// `name`, with the body the Kubernetes API documents for it (k8s.io/apimachinery
    /// `pkg/api/errors`: `NewConflict`, `NewInvalid`, `NewTooManyRequests`, `NewTimeoutError`);
    /// 500, 503 and 403 keep the bodies they had before the others existed, so recorded runs
    /// replay byte for byte (docs/apiserver.md#error-windows).
    pub fn from_window(status: ErrorStatus, name: Option<&str>) -> Self {
        let code = status.http_code();
        let object = name.unwrap_or("");
        match status {
            ErrorStatus::Internal | ErrorStatus::Unavailable | ErrorStatus::PermissionDenied => {
                let message = format!("the API server answers {code} (an authority_errors window)");
                Self::server_error(code, message)
            }
            ErrorStatus::Conflict => {
                let message = format!(
                    "Operation cannot be fulfilled on {QUALIFIED} \"{object}\": the object has \
                     been modified; please apply your changes to the latest version and try \
                     again"
                );
                Self::new(code, "Conflict", message, name)
            }
            ErrorStatus::Invalid => {
                let detail = "Invalid value: an authority_errors window refuses this write";
                let mut error = Self::new(
                    code,
                    "Invalid",
                    format!(
                        "Lease.coordination.k8s.io \"{object}\" is invalid: metadata: {detail}"
                    ),
                    Some(object),
                );
                if let Some(details) = &mut error.details {
                    details.kind = Some("Lease".to_owned());
                    details.causes = Some(vec![StatusCause {
                        field: Some("metadata".to_owned()),
                        message: Some(detail.to_owned()),
                        reason: Some("FieldValueInvalid".to_owned()),
                    }]);
                }
                error
            }
            ErrorStatus::TooManyRequests => {
                // The message of the real server's max-in-flight filter; it asks for a second.
                let message = "Too many requests, please try again later.".to_owned();
                Self::retry_after(code, "TooManyRequests", message, 1)
            }
            ErrorStatus::Timeout => {
                // The real server's request-timeout filter, which suggests no delay (0).
                let message = "Timeout: request did not complete within requested timeout - \
                               context deadline exceeded"
                    .to_owned();
                Self::retry_after(code, "Timeout", message, 0)
            }
        }
    }

    /// A refusal whose `details.retryAfterSeconds` (and so, when positive, the `Retry-After`
    /// header) asks the client to come back after `seconds`.
    fn retry_after(code: u16, reason: &'static str, message: String, seconds: i32) -> Self {
        ApiError {
            code,
            reason,
            message,
            details: Some(Box::new(StatusDetails {
                retry_after_seconds: Some(seconds),
                ..StatusDetails::default()
            })),
        }
    }

    /// The `Status` body.
    pub fn status(&self) -> Status {
        Status {
            code: Some(i32::from(self.code)),
            message: Some(self.message.clone()),
            reason: Some(self.reason.to_owned()),
            status: Some("Failure".to_owned()),
            details: self.details.as_deref().cloned(),
            ..Status::default()
        }
    }
}

fn details(name: &str) -> StatusDetails {
    StatusDetails {
        name: Some(name.to_owned()),
        group: Some("coordination.k8s.io".to_owned()),
        kind: Some("leases".to_owned()),
        ..StatusDetails::default()
    }
}

/// `Apply failed with 1 conflict: conflict with "m": .spec.x`, or for several the conflicts
/// grouped by manager, a line per field (`getConflictMessage` in k8s.io/apimachinery
/// `pkg/util/managedfields/internal/conflict.go`). `conflicts` is sorted by manager.
fn conflict_message(conflicts: &[Conflict]) -> String {
    if let [only] = conflicts {
        return format!(
            "Apply failed with 1 conflict: conflict with {}: {}",
            only.manager,
            field_string(&only.field)
        );
    }
    let mut lines = Vec::new();
    for (index, conflict) in conflicts.iter().enumerate() {
        if index == 0 || conflicts[index - 1].manager != conflict.manager {
            lines.push(format!("conflicts with {}:", conflict.manager));
        }
        lines.push(format!("- {}", field_string(&conflict.field)));
    }
    format!(
        "Apply failed with {} conflicts: {}",
        conflicts.len(),
        lines.join("\n")
    )
}

/// The `Status` a successful delete returns (`status: Success`, the object's name and uid).
pub fn deleted(name: &str, uid: Option<String>) -> Status {
    Status {
        status: Some("Success".to_owned()),
        details: Some(StatusDetails {
            uid,
            ..details(name)
        }),
        ..Status::default()
    }
}
