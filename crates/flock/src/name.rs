//! File-name stems for session ids: a sanitised prefix for people reading `ls`, plus a hash
//! of the whole id for uniqueness.

use sha2::{Digest, Sha256};

/// Longest sanitised prefix of a stem, in bytes.
pub const PREFIX_MAX_BYTES: usize = 40;

/// Hex digits of the SHA-256 of the session id that end every stem (64 bits).
const HASH_HEX_CHARS: usize = 16;

/// The file-name stem of session id `id`: `{prefix}-{hash}`.
///
/// - `prefix`: the first [`PREFIX_MAX_BYTES`] bytes of `id`, every byte outside
///   `[A-Za-z0-9_-]` replaced by `_` (a multi-byte character becomes one `_` per byte);
/// - `hash`: the first 16 lowercase hex digits of SHA-256 over the full UTF-8 bytes of `id`, so
///   ids that differ only in case, in a replaced byte or past the cut get different stems.
///
/// The stem is at most 57 bytes of `[A-Za-z0-9_-]`: it has no `/`, no `.` and no NUL, so
/// `{dir}/{stem}.lock` and its siblings always name a file directly inside `dir`. Any `&str`
/// is accepted (no length limit): the stem's length does not depend on the id's. The mapping
/// names existing files: it must never change (golden values are pinned in the tests).
pub fn stem(id: &str) -> String {
    let prefix: String = id
        .bytes()
        .take(PREFIX_MAX_BYTES)
        .map(|b| {
            if b.is_ascii_alphanumeric() || b == b'_' || b == b'-' {
                char::from(b)
            } else {
                '_'
            }
        })
        .collect();
    format!("{prefix}-{}", hash_hex(id))
}

fn hash_hex(id: &str) -> String {
    let digest = Sha256::digest(id.as_bytes());
    let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
    hex[..HASH_HEX_CHARS].to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;
    use leasesim_core::lease::{LeaseError, SESSION_ID_MAX_BYTES, SessionId};

    /// Only `[A-Za-z0-9_-]`, one `-` before the 16 hex digits, and short enough for any file
    /// system's name limit once a suffix is added.
    fn assert_safe(stem: &str) {
        assert!(
            stem.bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-'),
            "{stem:?}"
        );
        assert!(
            stem.len() <= PREFIX_MAX_BYTES + 1 + HASH_HEX_CHARS,
            "{stem:?}"
        );
        let (_, hash) = stem.rsplit_once('-').expect("a `-` before the hash");
        assert_eq!(hash.len(), HASH_HEX_CHARS, "{stem:?}");
        assert!(hash.bytes().all(|b| b.is_ascii_hexdigit()), "{stem:?}");
    }

    #[test]
    fn golden_stems_never_change() {
        // Hashes from `hashlib.sha256(id).hexdigest()[:16]` (Python), not from this code.
        assert_eq!(stem("s1"), "s1-e8bc163c82eee187");
        assert_eq!(stem("../etc/passwd"), "___etc_passwd-7fef78f53440346c");
    }

    #[test]
    fn dots_and_slashes_never_reach_the_stem() {
        for id in ["..", ".", "/", "a/../../b", "../x", "a/b", "/etc/passwd"] {
            let s = stem(id);
            assert_safe(&s);
            assert!(!s.contains('/') && !s.contains('.'), "{id:?} → {s:?}");
        }
        assert!(stem("..").starts_with("__-"));
        assert!(stem("a/../../b").starts_with("a_______b-"));
    }

    #[test]
    fn a_nul_byte_is_refused_by_session_id_and_replaced_by_stem() {
        assert!(matches!(
            SessionId::new("a\0b"),
            Err(LeaseError::InvalidSession { .. })
        ));
        let s = stem("a\0b");
        assert_safe(&s);
        assert!(s.starts_with("a_b-"), "{s:?}");
    }

    #[test]
    fn long_ids_are_cut_and_still_told_apart() {
        let longest = "x".repeat(SESSION_ID_MAX_BYTES);
        let id = SessionId::new(longest.clone()).expect("the longest id is valid");
        let s = super::super::safe_name(&id);
        assert_safe(&s);
        assert!(s.starts_with(&"x".repeat(PREFIX_MAX_BYTES)));
        let huge_a = "y".repeat(10 * 1024);
        let huge_b = format!("{}z", "y".repeat(10 * 1024 - 1));
        assert_safe(&stem(&huge_a));
        assert_ne!(stem(&huge_a), stem(&huge_b), "ids differing past the cut");
        assert_eq!(stem(&huge_a).len(), PREFIX_MAX_BYTES + 1 + HASH_HEX_CHARS);
    }

    #[test]
    fn unicode_becomes_one_underscore_per_byte() {
        let s = stem("sé/ß");
        assert_safe(&s);
        assert!(
            s.starts_with(&format!("s{}-", "_".repeat("é/ß".len()))),
            "{s:?}"
        );
        // A cut inside a multi-byte character is still safe.
        let s = stem(&format!("{}é", "a".repeat(PREFIX_MAX_BYTES - 1)));
        assert_safe(&s);
    }

    #[test]
    fn ids_differing_in_case_or_in_a_replaced_byte_get_different_stems() {
        assert_ne!(stem("Session"), stem("session"));
        assert_ne!(stem("a/b"), stem("a.b"));
        assert_ne!(stem("a/b"), stem("a_b"));
        assert_eq!(
            stem("a/b").split_once('-').map(|(p, _)| p),
            stem("a_b").split_once('-').map(|(p, _)| p),
            "same prefix, told apart by the hash"
        );
    }
}
