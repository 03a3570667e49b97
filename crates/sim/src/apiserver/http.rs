//! HTTP/1.1 for the API server: one hyper connection per accepted stream, routing of the
//! Lease paths, JSON in and out. hyper's `Date` header is off (it reads the real clock) and
//! no server timer runs (an idle connection stays open until the peer closes it).

use std::convert::Infallible;
use std::sync::Arc;

use futures_util::StreamExt;
use hyper::body::{Body, Incoming as HttpBody};
use hyper::{Method, Request, Response, StatusCode, header};
use hyper_util::rt::TokioIo;
use k8s_openapi::api::coordination::v1::Lease;
use serde::Serialize;
use serde_json::Value;

use super::status::{self, ApiError};
use super::{ApiServer, ObjectKey, Preconditions};
use leasesim_net::Incoming;

/// Largest request body accepted, in bytes (a real API server takes 3 MiB).
pub const MAX_BODY_BYTES: usize = 3 * 1024 * 1024;

const PREFIX: &str = "/apis/coordination.k8s.io/v1/namespaces/";

pub(super) async fn serve(server: Arc<ApiServer>, mut incoming: Incoming) -> std::io::Result<()> {
    while let Some(conn) = incoming.next().await {
        let conn = conn?;
        let server = server.clone();
        // The caller, for the error windows that single one out.
        let peer: Option<Arc<str>> = conn.peer().map(Arc::from);
        tokio::spawn(async move {
            let service = hyper::service::service_fn(move |request| {
                let (server, peer) = (server.clone(), peer.clone());
                async move { Ok::<_, Infallible>(respond(&server, peer.as_deref(), request).await) }
            });
            let mut builder = hyper::server::conn::http1::Builder::new();
            builder.auto_date_header(false).header_read_timeout(None);
            if let Err(error) = builder.serve_connection(TokioIo::new(conn), service).await {
                tracing::debug!(target: "leasesim::sim::apiserver::http", %error, "API server connection ended");
            }
        });
    }
    Ok(())
}

/// What a path names.
enum Route {
    Collection(String),
    Object(ObjectKey),
}

fn route(path: &str) -> Result<Route, ApiError> {
    let rest = path
        .strip_prefix(PREFIX)
        .ok_or_else(|| ApiError::no_route(path))?;
    let parts: Vec<&str> = rest.split('/').collect();
    match parts.as_slice() {
        [namespace, "leases"] if !namespace.is_empty() => {
            Ok(Route::Collection((*namespace).into()))
        }
        [namespace, "leases", name] if !namespace.is_empty() && !name.is_empty() => {
            Ok(Route::Object(ObjectKey {
                namespace: (*namespace).into(),
                name: (*name).into(),
            }))
        }
        _ => Err(ApiError::no_route(path)),
    }
}

async fn respond(
    server: &ApiServer,
    peer: Option<&str>,
    request: Request<HttpBody>,
) -> Response<String> {
    match handle(server, peer, request).await {
        Ok((code, body)) => json(code, body),
        Err(error) => {
            let code =
                StatusCode::from_u16(error.code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
            let mut response = json(code, to_json(&error.status()));
            // As the real server's `ErrorNegotiated` (k8s.io/apiserver
            // `pkg/endpoints/handlers/responsewriters`): a retry delay is also a header.
            let delay = error.details.as_ref().and_then(|d| d.retry_after_seconds);
            if let Some(seconds) = delay.filter(|s| *s > 0) {
                response
                    .headers_mut()
                    .insert(header::RETRY_AFTER, header::HeaderValue::from(seconds));
            }
            response
        }
    }
}

fn json(code: StatusCode, body: String) -> Response<String> {
    let mut response = Response::new(body);
    *response.status_mut() = code;
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        header::HeaderValue::from_static("application/json"),
    );
    response
}

fn to_json(value: &impl Serialize) -> String {
    // Serialising these types (k8s-openapi objects, `Value`) cannot fail.
    serde_json::to_string(value).unwrap_or_default()
}

/// The query parameters this server reads (k8s.io/apimachinery `PatchOptions`,
/// `ListOptions`).
#[derive(Default)]
struct Query {
    field_manager: Option<String>,
    force: Option<bool>,
    dry_run: bool,
    watch: bool,
}

fn query(uri: &hyper::Uri) -> Query {
    let mut found = Query::default();
    let pairs = form_urlencoded::parse(uri.query().unwrap_or("").as_bytes());
    for (key, value) in pairs {
        match &*key {
            "fieldManager" => found.field_manager = Some(value.into_owned()),
            "force" => found.force = Some(value == "true" || value == "1"),
            "dryRun" => found.dry_run = true,
            "watch" => found.watch = value == "true" || value == "1",
            _ => {}
        }
    }
    found
}

/// The manager of an update: `fieldManager`, else the `User-Agent` up to its first `/`
/// (`managerOrUserAgent` in k8s.io/apiserver `pkg/endpoints/handlers/create.go`).
fn manager(query: &Query, headers: &hyper::HeaderMap) -> String {
    if let Some(manager) = query.field_manager.as_deref().filter(|m| !m.is_empty()) {
        return manager.to_owned();
    }
    let agent = headers
        .get(header::USER_AGENT)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    let prefix = agent.split('/').next().unwrap_or("");
    prefix
        .chars()
        .filter(|c| !c.is_control())
        .take(128)
        .collect()
}

async fn handle(
    server: &ApiServer,
    peer: Option<&str>,
    request: Request<HttpBody>,
) -> Result<(StatusCode, String), ApiError> {
    server.handler_start().await;
    let (parts, body) = request.into_parts();
    let name = match route(parts.uri.path()) {
        Ok(Route::Object(key)) => Some(key.name),
        _ => None,
    };
    server.check_faults(peer, parts.method == Method::GET, name.as_deref())?;
    let query = query(&parts.uri);
    if query.dry_run {
        return Err(ApiError::bad_request(
            "dryRun is not supported by this API server".into(),
        ));
    }
    let route = route(parts.uri.path())?;
    let content_type = parts
        .headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_owned();
    let manager = manager(&query, &parts.headers);
    let body = read_body(body).await?;
    match (parts.method, route) {
        (Method::GET, _) if query.watch => Err(ApiError::method_not_allowed("GET ?watch=true")),
        (Method::GET, Route::Collection(namespace)) => {
            let (items, rv) = server.list(&namespace).await?;
            Ok((StatusCode::OK, list_json(&items, rv)))
        }
        (Method::POST, Route::Collection(namespace)) => {
            let created = server.create(&namespace, parse(&body)?, &manager).await?;
            Ok((StatusCode::CREATED, to_json(&created)))
        }
        (Method::GET, Route::Object(key)) => {
            Ok((StatusCode::OK, to_json(&server.get(&key).await?)))
        }
        (Method::PUT, Route::Object(key)) => {
            let written = server.replace(&key, parse(&body)?, &manager).await?;
            Ok(created_or_ok(written))
        }
        (Method::PATCH, Route::Object(key)) => {
            patch(server, &key, &content_type, &query, &manager, &body).await
        }
        (Method::DELETE, Route::Object(key)) => {
            let uid = server.delete(&key, &preconditions(&body)?).await?;
            Ok((StatusCode::OK, to_json(&status::deleted(&key.name, uid))))
        }
        (method, Route::Collection(_)) => Err(ApiError::method_not_allowed(&format!(
            "{method} on a collection"
        ))),
        (method, Route::Object(_)) => Err(ApiError::method_not_allowed(&format!(
            "{method} on an object"
        ))),
    }
}

/// 201 with a created object, else 200.
fn created_or_ok((lease, created): (Lease, bool)) -> (StatusCode, String) {
    let code = if created {
        StatusCode::CREATED
    } else {
        StatusCode::OK
    };
    (code, to_json(&lease))
}

/// A PATCH, by its content type: server-side apply (docs/apiserver.md#server-side-apply),
/// merge or strategic merge patch; any other is 415.
async fn patch(
    server: &ApiServer,
    key: &ObjectKey,
    content_type: &str,
    query: &Query,
    manager: &str,
    body: &[u8],
) -> Result<(StatusCode, String), ApiError> {
    let media = content_type.split(';').next().unwrap_or("").trim();
    match media {
        "application/apply-patch+yaml" => {
            if query.field_manager.as_deref().is_none_or(str::is_empty) {
                return Err(ApiError::invalid_patch_options(
                    "fieldManager",
                    "FieldValueRequired",
                    "Required value: is required for apply patch",
                ));
            }
            // YAML is a superset of JSON; a body that is YAML but not JSON is not served.
            let config: Value = serde_json::from_slice(body)
                .map_err(|_| ApiError::unsupported_media_type("application/apply-patch+yaml"))?;
            let force = query.force.unwrap_or(false);
            let written = server.apply(key, &config, manager, force).await?;
            Ok(created_or_ok(written))
        }
        "application/merge-patch+json" | "application/strategic-merge-patch+json" => {
            if query.force.is_some() {
                return Err(ApiError::invalid_patch_options(
                    "force",
                    "FieldValueForbidden",
                    "Forbidden: may not be specified for non-apply patch",
                ));
            }
            let patch: Value = parse(body)?;
            Ok((
                StatusCode::OK,
                to_json(&server.patch(key, &patch, manager).await?),
            ))
        }
        other => Err(ApiError::unsupported_media_type(other)),
    }
}

async fn read_body(mut body: HttpBody) -> Result<Vec<u8>, ApiError> {
    let mut bytes = Vec::new();
    while let Some(frame) =
        std::future::poll_fn(|cx| std::pin::Pin::new(&mut body).poll_frame(cx)).await
    {
        let frame =
            frame.map_err(|e| ApiError::bad_request(format!("cannot read the body: {e}")))?;
        if let Ok(data) = frame.into_data() {
            bytes.extend_from_slice(&data);
        }
        if bytes.len() > MAX_BODY_BYTES {
            return Err(ApiError::bad_request(format!(
                "the request body is longer than {MAX_BODY_BYTES} bytes"
            )));
        }
    }
    Ok(bytes)
}

fn parse<T: serde::de::DeserializeOwned>(body: &[u8]) -> Result<T, ApiError> {
    serde_json::from_slice(body)
        .map_err(|e| ApiError::bad_request(format!("the request body is not a valid object: {e}")))
}

/// `DeleteOptions.preconditions` from a DELETE's body (which may be empty).
fn preconditions(body: &[u8]) -> Result<Preconditions, ApiError> {
    if body.iter().all(u8::is_ascii_whitespace) {
        return Ok(Preconditions::default());
    }
    let options: Value = parse(body)?;
    let field = |name: &str| {
        options
            .pointer(&format!("/preconditions/{name}"))
            .and_then(Value::as_str)
            .map(str::to_owned)
    };
    Ok(Preconditions {
        resource_version: field("resourceVersion"),
        uid: field("uid"),
    })
}

fn list_json(items: &[Lease], resource_version: u64) -> String {
    let items: Vec<Value> = items
        .iter()
        .map(|lease| serde_json::to_value(lease).unwrap_or(Value::Null))
        .collect();
    to_json(&serde_json::json!({
        "apiVersion": "coordination.k8s.io/v1",
        "kind": "LeaseList",
        "metadata": {"resourceVersion": resource_version.to_string()},
        "items": items,
    }))
}
