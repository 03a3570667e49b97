//! The API server's refusals as Kubernetes `Status` objects (`kind: Status`, `status:
//! Failure`), with the codes, reasons and messages a real API server sends
//! (k8s.io/apimachinery `errors.New*`).

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Status, StatusDetails};

use super::store::ObjectKey;

/// The resource's qualified name in messages (`leases.coordination.k8s.io`).
const QUALIFIED: &str = "leases.coordination.k8s.io";

/// A refused request: the HTTP status code and the `Status` body that goes with it.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct ApiError {
    /// HTTP status code (404, 409, 422, 500…).
    pub code: u16,
    /// `Status.reason` (`NotFound`, `AlreadyExists`, `Conflict`, `Invalid`, `BadRequest`,
    /// `MethodNotAllowed`, `UnsupportedMediaType`, `InternalError`, `ServiceUnavailable`).
    pub reason: &'static str,
    /// `Status.message`.
    pub message: String,
    /// The object's name, for `Status.details`.
    pub name: Option<String>,
}

impl ApiError {
    fn new(code: u16, reason: &'static str, message: String, name: Option<&str>) -> Self {
        ApiError {
            code,
            reason,
            message,
            name: name.map(str::to_owned),
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

    /// 405: a method this path does not take.
    pub fn method_not_allowed(method: &str) -> Self {
        let message =
            format!("the server does not allow this method on the requested resource ({method})");
        Self::new(405, "MethodNotAllowed", message, None)
    }

    /// 415: a patch type this server does not apply.
    pub fn unsupported_media_type(content_type: &str) -> Self {
        let message = format!(
            "the body of the request was in an unknown format ({content_type}): accepted \
             patch types are application/merge-patch+json and \
             application/strategic-merge-patch+json"
        );
        Self::new(415, "UnsupportedMediaType", message, None)
    }

    /// 500, 503 or 403 (an error window, or broken storage), nothing applied.
    pub fn server_error(code: u16, message: String) -> Self {
        let reason = match code {
            503 => "ServiceUnavailable",
            403 => "Forbidden",
            _ => "InternalError",
        };
        Self::new(code, reason, message, None)
    }

    /// The `Status` body.
    pub fn status(&self) -> Status {
        Status {
            code: Some(i32::from(self.code)),
            message: Some(self.message.clone()),
            reason: Some(self.reason.to_owned()),
            status: Some("Failure".to_owned()),
            details: self.name.as_ref().map(|name| details(name)),
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
