//! Each kind of [`Evidence`]: the sentence rendered from its data (what reports show, word
//! for word as results.jsonl version 1 kept it), and its tagged JSON form.

use super::Evidence;
use leasesim_history::{Process, WriteVerb};

/// `evidence` renders as `prose` and reads back from its JSON, whose one key is `tag`.
fn renders(evidence: &Evidence, prose: &str, tag: &str) {
    assert_eq!(evidence.to_string(), prose);
    let json = serde_json::to_value(evidence).unwrap();
    let keys: Vec<&String> = json.as_object().unwrap().keys().collect();
    assert_eq!(keys, [tag], "{json}");
    assert_eq!(&serde_json::from_value::<Evidence>(json).unwrap(), evidence);
}

#[test]
fn an_op_is_named_by_its_id() {
    renders(&Evidence::Op(12), "op 12", "op");
    assert_eq!(
        serde_json::to_string(&Evidence::Op(12)).unwrap(),
        r#"{"op":12}"#
    );
}

#[test]
fn a_ledger_record_is_named_by_its_session_and_seq() {
    renders(&Evidence::seq("s1", 4), "ledger s1 seq 4", "ledger_seq");
    assert_eq!(
        serde_json::to_string(&Evidence::seq("s1", 4)).unwrap(),
        r#"{"ledger_seq":{"session":"s1","seq":4}}"#
    );
}

#[test]
fn a_decision_is_named_by_its_requester_and_both_clocks() {
    let decision = Evidence::Decision {
        session: "s1".into(),
        owner: Process::new("replica-2", 0),
        at_authority_us: 12_004_000,
        at_us: 12_004_250,
    };
    renders(
        &decision,
        "decision s1 by replica-2 at 12.004250 s (authority 12.004 s)",
        "decision",
    );
}

#[test]
fn a_validity_check_is_named_by_its_replica_and_both_clocks() {
    let validity = Evidence::Validity {
        process: Process::new("replica-1", 1),
        session: "s1".into(),
        at_local_us: 4_792_000,
        at_us: 5_990_000,
    };
    renders(
        &validity,
        "validity s1 by replica-1#1 at 5.990 s (local 4.792 s)",
        "validity",
    );
}

#[test]
fn a_write_is_named_by_its_verb_holder_and_resource_version() {
    let write = Evidence::Write {
        session: "s1".into(),
        verb: WriteVerb::Update,
        holder_identity: "replica-2".into(),
        transitions: 3,
        resource_version: 17,
        at_us: 9_000_000,
    };
    renders(
        &write,
        "write update s1 rv 17 holder \"replica-2\" transitions 3 at 9.000 s",
        "write",
    );
}

#[test]
fn a_window_is_named_by_its_holder_token_op_and_span() {
    let window = Evidence::Window {
        process: Process::new("replica-1", 0),
        session: "s1".into(),
        token: 2,
        op: 5,
        from_us: 1_000_000,
        until_us: 4_000_500,
    };
    renders(
        &window,
        "window s1 of replica-1 token 2 from op 5: 1.000 s..4.000500 s",
        "window",
    );
}
