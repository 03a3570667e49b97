//! How scenario and run files spell a [`FaultKind`]: as its [`FaultKind::name`], the
//! schedule's word for the fault the kind draws (issue 18, "One vocabulary"). An old alias is
//! still read (`apiserver_errors`); a retired word (`lease_restarts`, `delete_record`) is
//! refused with an error naming the word that replaced it, so a profile written with it fails
//! to load instead of loading as something else.

use std::fmt;

use serde::de::{self, Deserializer, Visitor};
use serde::{Deserialize, Serialize, Serializer};

use super::generate::FaultKind;

/// Old spellings still read, and the kind each reads as.
const ALIASES: [(&str, FaultKind); 1] = [("apiserver_errors", FaultKind::AuthorityErrors)];

/// Words the swarm kinds used before they were the schedule's, and the kind that replaced
/// each: refused.
const RETIRED: [(&str, FaultKind); 2] = [
    ("lease_restarts", FaultKind::LeaseServiceRestarts),
    ("delete_record", FaultKind::DeleteLeaseRecord),
];

/// Every kind's name, in [`FaultKind::ALL`] order: the list an unknown word's error gives.
static NAMES: [&str; FaultKind::ALL.len()] = {
    let mut names = [""; FaultKind::ALL.len()];
    let mut i = 0;
    while i < names.len() {
        names[i] = FaultKind::ALL[i].name();
        i += 1;
    }
    names
};

impl Serialize for FaultKind {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.name())
    }
}

impl<'de> Deserialize<'de> for FaultKind {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_str(KindWord)
    }
}

/// Reads one word as a kind.
struct KindWord;

impl Visitor<'_> for KindWord {
    type Value = FaultKind;

    fn expecting(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str("a fault kind's name")
    }

    fn visit_str<E: de::Error>(self, word: &str) -> Result<FaultKind, E> {
        let named = FaultKind::ALL.into_iter().find(|kind| kind.name() == word);
        let aliased = || {
            ALIASES
                .iter()
                .find(|(old, _)| *old == word)
                .map(|(_, k)| *k)
        };
        if let Some(kind) = named.or_else(aliased) {
            return Ok(kind);
        }
        match RETIRED.iter().find(|(old, _)| *old == word) {
            Some((_, kind)) => Err(E::custom(format!(
                "unknown fault kind `{word}`: it is now `{}`, the schedule's name for the fault \
                 it draws",
                kind.name()
            ))),
            None => Err(E::unknown_variant(word, &NAMES)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(word: &str) -> Result<FaultKind, String> {
        serde_json::from_value(serde_json::Value::String(word.into())).map_err(|e| e.to_string())
    }

    #[test]
    fn every_kind_is_written_and_read_as_its_name() {
        for kind in FaultKind::ALL {
            let written = serde_json::to_value(kind).unwrap();
            assert_eq!(written, serde_json::Value::String(kind.name().into()));
            assert_eq!(read(kind.name()), Ok(kind));
        }
    }

    #[test]
    fn the_old_alias_reads_as_authority_errors() {
        assert_eq!(read("apiserver_errors"), Ok(FaultKind::AuthorityErrors));
    }

    #[test]
    fn a_retired_word_is_refused_naming_the_word_that_replaced_it() {
        assert_eq!(
            read("lease_restarts").unwrap_err(),
            "unknown fault kind `lease_restarts`: it is now `lease_service_restarts`, the \
             schedule's name for the fault it draws"
        );
        assert_eq!(
            read("delete_record").unwrap_err(),
            "unknown fault kind `delete_record`: it is now `delete_lease_record`, the \
             schedule's name for the fault it draws"
        );
    }

    #[test]
    fn an_unknown_word_lists_every_name() {
        let error = read("meteor").unwrap_err();
        assert!(
            error.starts_with("unknown variant `meteor`, expected one of `partition`, "),
            "{error}"
        );
        for kind in FaultKind::ALL {
            assert!(error.contains(&format!("`{}`", kind.name())), "{error}");
        }
        for (old, _) in RETIRED {
            assert!(!error.contains(&format!("`{old}`")), "{error}");
        }
    }

    #[test]
    fn no_name_is_an_alias_or_a_retired_word() {
        for (word, _) in ALIASES.iter().chain(&RETIRED) {
            assert!(
                FaultKind::ALL.iter().all(|kind| kind.name() != *word),
                "{word}"
            );
        }
    }
}
