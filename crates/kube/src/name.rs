//! Lease object names for session ids: a sanitised prefix for people reading `kubectl get
//! leases`, plus a hash for uniqueness.

use sha2::{Digest, Sha256};

use leasesim_core::lease::{LeaseError, SessionId};

/// Longest Lease object name this backend writes: a DNS-1123 label (63 characters), so the
/// name is also valid where Kubernetes wants a label value.
pub const OBJECT_NAME_MAX_CHARS: usize = 63;

/// Hex digits of the SHA-256 of the session id that end every name (64 bits).
const HASH_HEX_CHARS: usize = 16;

/// The Lease object name of session `id`: `{prefix}-{hash}`, or just `{hash}` when nothing of
/// the id survives sanitising.
///
/// - `prefix`: `id` lowercased, every character outside `a-z 0-9` replaced by `-`, runs of `-`
///   collapsed, leading and trailing `-` trimmed, cut so the whole name fits
///   [`OBJECT_NAME_MAX_CHARS`].
/// - `hash`: the first 16 lowercase hex digits of SHA-256 over the full UTF-8 bytes of `id`, so
///   ids that differ only in case, punctuation or past the cut get different names.
///
/// The result is a lowercase DNS-1123 label (`[a-z0-9]([-a-z0-9]*[a-z0-9])?`, at most 63
/// characters): it cannot contain `/` or `.`, so it never names another resource or path. The
/// mapping names existing objects in a cluster: it must never change (golden values are
/// pinned in the tests). The full id is also stored in the object's
/// [`super::SESSION_ANNOTATION`] and checked on every read.
pub fn object_name(id: &str) -> String {
    let hash = hash_hex(id);
    let room = OBJECT_NAME_MAX_CHARS - 1 - hash.len();
    let prefix = sanitise(id, room);
    if prefix.is_empty() {
        hash
    } else {
        format!("{prefix}-{hash}")
    }
}

/// `session` itself as its Lease object's name, for a crate that names the Lease it creates
/// after the session (a target's, docs/targets.md#kube-lease-manager): without leasesim's
/// [`super::SESSION_ANNOTATION`] on the object, the API server's `write` lines name the
/// session by the object. Kubernetes' rule for object names applies: a DNS-1123 subdomain
/// name — lowercase letters, digits, `-` and `.`, starting and ending with a letter or digit,
/// at most 253 characters.
///
/// # Errors
/// [`LeaseError::InvalidSession`] naming `who` (what names the Lease so) and the rule.
pub fn session_object_name<'a>(who: &str, session: &'a SessionId) -> Result<&'a str, LeaseError> {
    let name = session.as_str();
    let edge = |c: Option<char>| c.is_some_and(|c| c.is_ascii_lowercase() || c.is_ascii_digit());
    let inner = name
        .chars()
        .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' || c == '.');
    if name.len() <= 253 && inner && edge(name.chars().next()) && edge(name.chars().last()) {
        return Ok(name);
    }
    Err(LeaseError::InvalidSession {
        reason: format!(
            "{who} names the Lease as the session, so a session must be a DNS-1123 subdomain \
             name (lowercase letters, digits, '-' and '.', starting and ending with a letter or \
             digit, at most 253 characters): {name:?} is not"
        ),
    })
}

fn hash_hex(id: &str) -> String {
    let digest = Sha256::digest(id.as_bytes());
    let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
    hex[..HASH_HEX_CHARS].to_owned()
}

/// `id` lowercased to `[a-z0-9-]`, dashes collapsed and trimmed, at most `max_chars` long.
fn sanitise(id: &str, max_chars: usize) -> String {
    let mut out = String::with_capacity(max_chars);
    for c in id.chars().flat_map(char::to_lowercase) {
        let c = if c.is_ascii_lowercase() || c.is_ascii_digit() {
            c
        } else {
            '-'
        };
        if c == '-' && (out.is_empty() || out.ends_with('-')) {
            continue;
        }
        if out.len() == max_chars {
            break;
        }
        out.push(c);
    }
    while out.ends_with('-') {
        out.pop();
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A lowercase DNS-1123 label of at most 63 characters.
    fn is_dns_label(name: &str) -> bool {
        let bytes = name.as_bytes();
        let inner = |b: &u8| b.is_ascii_lowercase() || b.is_ascii_digit() || *b == b'-';
        let edge = |b: &u8| b.is_ascii_lowercase() || b.is_ascii_digit();
        !name.is_empty()
            && name.len() <= OBJECT_NAME_MAX_CHARS
            && bytes.iter().all(inner)
            && bytes.first().is_some_and(edge)
            && bytes.last().is_some_and(edge)
    }

    #[test]
    fn sessions_name_their_lease_themselves_when_they_are_dns_subdomain_names() {
        let name = |id: &str| {
            session_object_name("target:x", &SessionId::new(id).unwrap()).map(str::to_owned)
        };
        assert_eq!(name("s1").unwrap(), "s1");
        assert_eq!(name("orders.eu-1").unwrap(), "orders.eu-1");
        assert_eq!(name(&"a".repeat(253)).unwrap(), "a".repeat(253));
        for bad in ["S1", "-s1", "s1-", "s_1", "a b", ".s1", &"a".repeat(254)] {
            let error = name(bad).unwrap_err().to_string();
            assert!(
                error.contains("target:x names the Lease as the session")
                    && error.contains("DNS-1123 subdomain"),
                "{bad}: {error}"
            );
        }
    }

    #[test]
    fn golden_names_never_change() {
        assert_eq!(object_name("s1"), "s1-e8bc163c82eee187");
        assert_eq!(object_name("Session 1"), "session-1-c49ee2598cd9ae0d");
        assert_eq!(object_name(".."), "5ec1f7e700f37c3d");
    }

    #[test]
    fn hostile_ids_map_to_dns_labels() {
        let long = "x".repeat(256);
        let ids = [
            "..",
            ".",
            "/",
            "../../etc/passwd",
            "a/b",
            "-leading-and-trailing-",
            "ünïcödé-セッション",
            "🙂",
            long.as_str(),
        ];
        for id in ids {
            let name = object_name(id);
            assert!(is_dns_label(&name), "{id:?} → {name:?}");
            assert!(
                !name.contains('/') && !name.contains('.'),
                "{id:?} → {name:?}"
            );
        }
        assert_eq!(object_name(&long).len(), OBJECT_NAME_MAX_CHARS);
        assert_eq!(
            object_name("../../etc/passwd")[..10].to_owned(),
            "etc-passwd"
        );
    }

    #[test]
    fn ids_differing_only_in_case_or_punctuation_get_different_names() {
        assert_ne!(object_name("Session"), object_name("session"));
        assert_ne!(object_name("a/b"), object_name("a.b"));
        let (a, b) = ("y".repeat(255) + "a", "y".repeat(255) + "b");
        assert_ne!(
            object_name(&a),
            object_name(&b),
            "ids differing past the cut"
        );
        assert!(object_name("Session").starts_with("session-"));
    }
}
