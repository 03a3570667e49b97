//! The timeline of a small hand-written history: a slow replica is paused past its lease, a
//! second takes over, the first's late append is fenced.

use super::*;
use leasesim_check::linearizability::{Explanation, LinEvidence};
use leasesim_history::{History, Process};
use leasesim_results::record::{EvidenceRecord, ViolationRecord};

/// replica-1 (clock 20% slow) holds s1 token 1 and appends; it is paused 2–6 s; replica-2
/// takes over at 4.5 s with token 2; replica-1's append after the pause is fenced, one of
/// replica-2's is cut off (info), one refused (lease lost). The lease service is partitioned
/// from replica-2 for a moment and healed.
const HISTORY: &str = r#"{"v":1,"kind":"config","ttl_us":3000000,"skew_margin_us":300000,"renew_interval_us":1000000,"longest_reconnect_backoff_us":500000,"grace_period_us":3000000,"mutant":null,"seed":7,"replicas":2,"sessions":["s1"],"authority":"lease"}
{"v":1,"kind":"op","id":1,"process":{"replica":"replica-1","incarnation":0},"session":"s1","op":{"type":"lease_acquire","owner":{"replica":"replica-1","incarnation":0}},"invoke_us":100000,"complete_us":110000,"invoke_local_us":80000,"complete_local_us":88000,"outcome":"ok","result":{"type":"granted","token":1,"expiry_authority_us":3110000,"ttl_us":3000000}}
{"v":1,"kind":"op","id":2,"process":{"replica":"replica-1","incarnation":0},"session":"s1","op":{"type":"journal_open","epoch":1},"invoke_us":120000,"complete_us":130000,"invoke_local_us":96000,"complete_local_us":104000,"outcome":"ok","result":{"type":"opened","writer_id":{"owner":{"replica":"replica-1","incarnation":0},"journal":1},"fence_seq":1}}
{"v":1,"kind":"op","id":3,"process":{"replica":"replica-1","incarnation":0},"session":"s1","op":{"type":"journal_append","writer_id":{"owner":{"replica":"replica-1","incarnation":0},"journal":1},"seq_in_writer":1},"invoke_us":1000000,"complete_us":1010000,"invoke_local_us":800000,"complete_local_us":808000,"outcome":"ok","result":{"type":"appended","seq":2}}
{"v":1,"kind":"op","id":4,"process":{"replica":"replica-2","incarnation":0},"session":"s1","op":{"type":"lease_acquire","owner":{"replica":"replica-2","incarnation":0}},"invoke_us":4500000,"complete_us":4510000,"invoke_local_us":4500000,"complete_local_us":4510000,"outcome":"ok","result":{"type":"granted","token":2,"expiry_authority_us":7510000,"ttl_us":3000000}}
{"v":1,"kind":"op","id":5,"process":{"replica":"replica-2","incarnation":0},"session":"s1","op":{"type":"journal_open","epoch":2},"invoke_us":4520000,"complete_us":4530000,"invoke_local_us":4520000,"complete_local_us":4530000,"outcome":"ok","result":{"type":"opened","writer_id":{"owner":{"replica":"replica-2","incarnation":0},"journal":1},"fence_seq":3}}
{"v":1,"kind":"op","id":6,"process":{"replica":"replica-1","incarnation":0},"session":"s1","op":{"type":"journal_append","writer_id":{"owner":{"replica":"replica-1","incarnation":0},"journal":1},"seq_in_writer":2},"invoke_us":6000000,"complete_us":6010000,"invoke_local_us":4800000,"complete_local_us":4808000,"outcome":"fail","result":{"type":"fenced","expected":2,"actual":3}}
{"v":1,"kind":"op","id":7,"process":{"replica":"replica-2","incarnation":0},"session":"s1","op":{"type":"journal_append","writer_id":{"owner":{"replica":"replica-2","incarnation":0},"journal":1},"seq_in_writer":1},"invoke_us":6500000,"complete_us":8000000,"invoke_local_us":6500000,"complete_local_us":null,"outcome":"info","result":{"type":"cut_off","reason":"run ended"}}
{"v":1,"kind":"op","id":8,"process":{"replica":"replica-2","incarnation":0},"session":"s1","op":{"type":"journal_append","writer_id":{"owner":{"replica":"replica-2","incarnation":0},"journal":1},"seq_in_writer":2},"invoke_us":7900000,"complete_us":7900000,"invoke_local_us":7900000,"complete_local_us":7900000,"outcome":"fail","result":{"type":"lease_lost","cause":{"type":"deadline","valid_until_local_us":7210000}}}
{"v":1,"kind":"decision","session":"s1","owner":{"replica":"replica-1","incarnation":0},"decision":{"type":"grant","token":1,"expiry_authority_us":3110000,"ttl_us":3000000},"at_authority_us":110000,"at_us":110000}
{"v":1,"kind":"decision","session":"s1","owner":{"replica":"replica-2","incarnation":0},"decision":{"type":"grant","token":2,"expiry_authority_us":7510000,"ttl_us":3000000},"at_authority_us":4510000,"at_us":4510000}
{"v":1,"kind":"nemesis","at_us":2000000,"host":"replica-1","action":"pause","peer":null,"detail":"4000 ms"}
{"v":1,"kind":"nemesis","at_us":6000000,"host":"replica-1","action":"resume","peer":null,"detail":null}
{"v":1,"kind":"nemesis","at_us":5000000,"host":"replica-2","action":"partition","peer":"lease","detail":null}
{"v":1,"kind":"nemesis","at_us":6200000,"host":"all","action":"heal","peer":null,"detail":null}
{"v":1,"kind":"nemesis","at_us":3000000,"host":"lease","action":"wall_jump","peer":null,"detail":"-2000 ms"}
{"v":1,"kind":"phase","name":"faults_healed","at_us":6200000}
{"v":1,"kind":"phase","name":"run_ended","at_us":8000000}
{"v":1,"kind":"clock","host":"lease","boot":0,"from_us":0,"local_from_us":0,"drift_ppm":0,"suspended":false}
{"v":1,"kind":"clock","host":"ledger","boot":0,"from_us":0,"local_from_us":0,"drift_ppm":0,"suspended":false}
{"v":1,"kind":"clock","host":"replica-1","boot":0,"from_us":0,"local_from_us":0,"drift_ppm":-200000,"suspended":false}
{"v":1,"kind":"clock","host":"replica-2","boot":0,"from_us":0,"local_from_us":0,"drift_ppm":0,"suspended":false}
{"v":1,"kind":"ledger","session":"s1","seq":1,"record":{"type":"fence","epoch":1,"owner":{"replica":"replica-1","incarnation":0},"writer_id":{"owner":{"replica":"replica-1","incarnation":0},"journal":1}}}
"#;

fn history() -> History {
    History::read_jsonl(HISTORY.as_bytes(), "history.jsonl").expect("the fixture is a history")
}

/// A violation proven by `evidence`.
fn violation(message: &str, evidence: Vec<Evidence>) -> Vec<ViolationRecord> {
    vec![ViolationRecord {
        message: message.into(),
        evidence: evidence.into_iter().map(Into::into).collect(),
        linearization: None,
    }]
}

fn fence_violation() -> Vec<ViolationRecord> {
    let validity = Evidence::Validity {
        process: Process::new("replica-1", 0),
        session: "s1".into(),
        at_local_us: 4_792_000,
        at_us: 5_990_000,
    };
    violation(
        "replica-1 appended after its lease expired",
        vec![Evidence::Op(6), Evidence::seq("s1", 2), validity],
    )
}

fn picture() -> String {
    let history = history();
    let highlight = Highlight::of_violations("STOP", &fence_violation(), &history);
    render(&history, "fixture seed 7: STOP violated", &highlight)
}

/// The `data-*` value of attribute `name` in each element of `svg` whose class list starts
/// with `class`.
fn attributes(svg: &str, class: &str, name: &str) -> Vec<String> {
    svg.split('<')
        .filter(|element| element.contains(&format!("class=\"{class}")))
        .filter_map(|element| {
            let start = element.find(&format!("{name}=\""))? + name.len() + 2;
            let end = element[start..].find('"')? + start;
            Some(element[start..end].to_owned())
        })
        .collect()
}

/// The text of every `<text>` element, trimmed.
fn texts(svg: &str) -> Vec<String> {
    svg.split("<text")
        .skip(1)
        .filter_map(|rest| {
            let start = rest.find('>')? + 1;
            let end = rest.find("</text>")?;
            Some(rest[start..end].trim().to_owned())
        })
        .collect()
}

#[test]
fn the_picture_is_pinned() {
    insta::assert_snapshot!("timeline_fixture", picture());
}

#[test]
fn the_same_history_gives_the_same_bytes() {
    assert_eq!(picture(), picture());
}

#[test]
fn one_lane_per_host_replicas_first_then_the_services() {
    let lanes = attributes(&picture(), "lane\"", "data-host");
    assert_eq!(lanes, ["replica-1", "replica-2", "lease", "ledger"]);
}

#[test]
fn every_append_and_fence_is_one_mark_with_its_class() {
    let svg = picture();
    let mut marks: Vec<(String, String)> = svg
        .split('<')
        .filter(|e| e.starts_with("g ") && e.contains("class=\"mark "))
        .map(|e| {
            let class = e
                .split("class=\"")
                .nth(1)
                .unwrap()
                .split('"')
                .next()
                .unwrap();
            let op = e
                .split("data-op=\"")
                .nth(1)
                .unwrap()
                .split('"')
                .next()
                .unwrap();
            (op.to_owned(), class.to_owned())
        })
        .collect();
    marks.sort();
    assert_eq!(
        marks,
        [
            ("2".to_owned(), "mark fence landed".to_owned()),
            ("3".to_owned(), "mark append landed".to_owned()),
            ("5".to_owned(), "mark fence landed".to_owned()),
            ("6".to_owned(), "mark append fenced".to_owned()),
            ("7".to_owned(), "mark append unknown".to_owned()),
            ("8".to_owned(), "mark append refused".to_owned()),
        ]
    );
}

#[test]
fn each_hold_is_labelled_with_its_token() {
    let svg = picture();
    assert_eq!(attributes(&svg, "hold", "data-token"), ["1", "2"]);
    let labels = texts(&svg);
    assert!(labels.contains(&"s1 t1".to_owned()) && labels.contains(&"s1 t2".to_owned()));
}

#[test]
fn a_slow_clocks_validity_window_overruns_the_hold() {
    let holds = holds::holds(&history());
    let first = &holds[0];
    // Sent at local 0.08 s; valid until local 0.08 + 2.7 = 2.78 s, which a clock 20% slow
    // reads at true 3.475 s, after the authority's expiry at 3.11 s.
    assert_eq!((first.token, first.until_us), (1, 3_110_000));
    assert_eq!(first.valid_until_us, Some(3_475_000));
}

#[test]
fn a_short_grants_validity_window_takes_the_checkers_margin_of_the_granted_ttl() {
    // replica-2 granted 1.5 s of the configured 3 s: margin 0.15 s (the config's 10 %, as the
    // client and STOP take it), valid until 4.5 + 1.5 − 0.15 = 5.85 s on its clock (no drift).
    let short = HISTORY.replace(
        r#""token":2,"expiry_authority_us":7510000,"ttl_us":3000000"#,
        r#""token":2,"expiry_authority_us":6010000,"ttl_us":1500000"#,
    );
    let history = History::read_jsonl(short.as_bytes(), "history.jsonl").expect("a history");
    let holds = holds::holds(&history);
    let second = holds
        .iter()
        .find(|h| h.token == 2)
        .expect("replica-2's hold");
    assert_eq!(
        (second.until_us, second.valid_until_us),
        (6_010_000, Some(5_850_000))
    );
}

#[test]
fn every_fault_is_a_band_on_each_host_it_hits() {
    let svg = picture();
    let mut faults = attributes(&svg, "fault", "data-fault");
    faults.sort();
    // The partition hits both its ends; the heal closes it and is no band of its own.
    assert_eq!(faults, ["partition", "partition", "pause", "wall_jump"]);
    let bands = bands::bands(&history(), 8_000_000);
    let pause = bands.iter().find(|b| b.name == "pause").unwrap();
    assert_eq!(
        (pause.from_us, pause.until_us),
        (2_000_000, Some(6_000_000))
    );
    let partition = bands.iter().find(|b| b.name == "partition").unwrap();
    assert_eq!(partition.until_us, Some(6_200_000));
    assert_eq!(partition.hosts, ["replica-2", "lease"]);
}

#[test]
fn the_violations_evidence_is_ringed_and_named() {
    let svg = picture();
    // op 6 by name, op 3 as the op that committed ledger s1 seq 2.
    assert_eq!(attributes(&svg, "evidence", "data-op"), ["3", "6"]);
    assert!(texts(&svg).contains(&"STOP violated".to_owned()));
    // The validity check the evidence names, on its replica's lane.
    assert_eq!(
        attributes(&svg, "evidence instant", "data-host"),
        ["replica-1"]
    );
}

#[test]
fn a_linearizability_explanation_marks_the_stuck_operation_and_the_prefix() {
    let explanation = Explanation {
        partition: "\"s1\"".into(),
        summary: "replica-2 acquire s1 got token 2, but the lease could only be held by \
                  replica-1 then"
            .into(),
        stuck_index: 1,
        stuck_process: 2,
        stuck_call: 4_500_000,
        stuck_return: Some(4_510_000),
        stuck: "replica-2 acquire s1 -> granted token 2 [4.500 s, 4.510 s]".into(),
        placed_before: 1,
        states_before: vec!["held by replica-1 token 1 until 3.110 s: the lease is held".into()],
        states_omitted: 0,
        longest_prefix: vec!["replica-1 acquire s1 -> granted token 1 -> held".into()],
        longest_prefix_indices: vec![0],
    };
    let violations = vec![ViolationRecord {
        message: "no linearization of partition \"s1\"".into(),
        evidence: Vec::new(),
        linearization: Some(Box::new(LinEvidence {
            explanation,
            stuck_op: Some(4),
            prefix_ops: vec![1, 2],
        })),
    }];
    let history = history();
    let highlight = Highlight::of_violations("LIN-LEASE", &violations, &history);
    assert_eq!(highlight.stuck, Some(4));
    assert_eq!(highlight.prefix.iter().copied().collect::<Vec<_>>(), [1, 2]);
    let svg = render(&history, "lin", &highlight);
    assert_eq!(attributes(&svg, "prefix", "data-op"), ["1", "2"]);
    assert_eq!(attributes(&svg, "evidence stuck", "data-op"), ["4"]);
}

#[test]
fn a_long_run_labels_only_what_fits() {
    // 300 appends in 60 s: marks for all, but no label is drawn for them, and the axis keeps
    // at most about a dozen ticks.
    let mut text = String::from(HISTORY.lines().next().unwrap());
    text.push('\n');
    for i in 0..300u64 {
        let at = 100_000 + i * 200_000;
        text += &format!(
            "{{\"v\":1,\"kind\":\"op\",\"id\":{},\"process\":{{\"replica\":\"replica-1\",\"incarnation\":0}},\"session\":\"s1\",\"op\":{{\"type\":\"ledger_append\",\"expected\":{i},\"record\":{{\"type\":\"event\",\"writer_id\":{{\"owner\":{{\"replica\":\"replica-1\",\"incarnation\":0}},\"journal\":1}},\"seq_in_writer\":{i},\"payload_hex\":\"\"}}}},\"invoke_us\":{at},\"complete_us\":{},\"invoke_local_us\":{at},\"complete_local_us\":{},\"outcome\":\"ok\",\"result\":{{\"type\":\"appended\",\"seq\":{}}}}}\n",
            i + 1,
            at + 1_000,
            at + 1_000,
            i + 1
        );
    }
    text += "{\"v\":1,\"kind\":\"phase\",\"name\":\"run_ended\",\"at_us\":60000000}\n";
    let history = History::read_jsonl(text.as_bytes(), "long").unwrap();
    let svg = render(&history, "long", &Highlight::default());
    assert_eq!(svg.matches("class=\"mark append landed\"").count(), 300);
    let texts = svg.matches("<text").count();
    // The title, 3 lane names (the config's replicas and authority), the axis ticks (0, 5, …,
    // 60 s: 13), the axis caption and 10 legend labels.
    assert!(texts <= 1 + 3 + 13 + 1 + 10, "{texts} text elements");
}

/// A KubeLease history (no authority clock, TTL 10 s): replica-1 creates s1's Lease at 5 ms
/// (token 1) and renews it at 3.3 s; the object is deleted at 5 s and replica-1 creates it
/// again at 6 s, token 1 again (the reply to that create is lost: replica-1 never learnt of
/// it); nobody writes until replica-2 takes over at 20 s with token 2, the last write at
/// 25 s.
const KUBE_HISTORY: &str = r#"{"v":1,"kind":"config","ttl_us":10000000,"skew_margin_us":1000000,"renew_interval_us":3333333,"longest_reconnect_backoff_us":2000000,"grace_period_us":10000000,"mutant":null,"seed":0,"replicas":2,"sessions":["s1"],"authority":null}
{"v":1,"kind":"op","id":1,"process":{"replica":"replica-1","incarnation":0},"session":"s1","op":{"type":"lease_acquire","owner":{"replica":"replica-1","incarnation":0}},"invoke_us":0,"complete_us":6000,"invoke_local_us":0,"complete_local_us":6000,"outcome":"ok","result":{"type":"granted","token":1,"expiry_authority_us":10000000,"ttl_us":10000000}}
{"v":1,"kind":"op","id":2,"process":{"replica":"replica-1","incarnation":0},"session":"s1","op":{"type":"lease_renew","owner":{"replica":"replica-1","incarnation":0},"token":1},"invoke_us":3300000,"complete_us":3306000,"invoke_local_us":3300000,"complete_local_us":3306000,"outcome":"ok","result":{"type":"granted","token":1,"expiry_authority_us":13300000,"ttl_us":10000000}}
{"v":1,"kind":"op","id":3,"process":{"replica":"replica-2","incarnation":0},"session":"s1","op":{"type":"lease_acquire","owner":{"replica":"replica-2","incarnation":0}},"invoke_us":19990000,"complete_us":20006000,"invoke_local_us":19990000,"complete_local_us":20006000,"outcome":"ok","result":{"type":"granted","token":2,"expiry_authority_us":29990000,"ttl_us":10000000}}
{"v":1,"kind":"write","host":"apiserver","session":"s1","object":"s1-0f","verb":"create","holder_identity":"replica-1#0","transitions":1,"resource_version":1,"at_us":5000}
{"v":1,"kind":"write","host":"apiserver","session":"s1","object":"s1-0f","verb":"update","holder_identity":"replica-1#0","transitions":1,"resource_version":2,"at_us":3304000}
{"v":1,"kind":"write","host":"apiserver","session":"s1","object":"s1-0f","verb":"delete","holder_identity":"","transitions":1,"resource_version":2,"at_us":5000000}
{"v":1,"kind":"write","host":"apiserver","session":"s1","object":"s1-0f","verb":"create","holder_identity":"replica-1#0","transitions":1,"resource_version":3,"at_us":6000000}
{"v":1,"kind":"write","host":"apiserver","session":"s1","object":"s1-0f","verb":"update","holder_identity":"replica-2#0","transitions":2,"resource_version":4,"at_us":20004000}
{"v":1,"kind":"write","host":"apiserver","session":"s1","object":"s1-0f","verb":"update","holder_identity":"replica-2#0","transitions":2,"resource_version":5,"at_us":25000000}
{"v":1,"kind":"phase","name":"run_ended","at_us":40000000}
"#;

/// KubeLease holds are the reigns the API server's writes record, exact to the write: a
/// delete ends one, the same token re-created is a second, an unrenewed one ends a TTL after
/// its last write, and a takeover's runs to its last write + TTL; each validity window is
/// the holder's own (send time of its last acquire or renew + TTL − skew margin), empty for
/// the reign it never learnt of.
#[test]
fn kube_lease_holds_are_the_reigns_in_the_api_servers_writes() {
    let history = History::read_jsonl(KUBE_HISTORY.as_bytes(), "kube.jsonl").unwrap();
    let holds: Vec<(String, u64, u64, u64, Option<u64>)> = holds::holds(&history)
        .into_iter()
        .map(|h| (h.host, h.token, h.from_us, h.until_us, h.valid_until_us))
        .collect();
    assert_eq!(
        holds,
        [
            ("replica-1".into(), 1, 5_000, 5_000_000, Some(12_300_000)),
            (
                "replica-1".into(),
                1,
                6_000_000,
                16_000_000,
                Some(6_000_000)
            ),
            (
                "replica-2".into(),
                2,
                20_004_000,
                35_000_000,
                Some(28_990_000)
            ),
        ]
    );
    let svg = render(&history, "kube", &Highlight::default());
    assert_eq!(attributes(&svg, "hold", "data-token"), ["1", "1", "2"]);
}

/// A lease call is a small square classed by what it got: the fixture's two grants landed,
/// and replica-1's acquire at 5 s (s1 held by token 2) refused — the refusal a LIVE
/// violation names is visible, not only its ring.
#[test]
fn every_lease_call_is_a_square_classed_by_its_reply() {
    let refused = r#"{"v":1,"kind":"op","id":9,"process":{"replica":"replica-1","incarnation":0},"session":"s1","op":{"type":"lease_acquire","owner":{"replica":"replica-1","incarnation":0}},"invoke_us":5000000,"complete_us":5010000,"invoke_local_us":4000000,"complete_local_us":4008000,"outcome":"fail","result":{"type":"held","holder_token":2}}"#;
    let text = format!("{HISTORY}{refused}\n");
    let history = History::read_jsonl(text.as_bytes(), "history.jsonl").unwrap();
    let svg = render(&history, "t", &Highlight::default());
    let calls: Vec<(String, String)> = ["call acquire landed", "call acquire refused"]
        .iter()
        .flat_map(|class| {
            attributes(&svg, class, "data-op")
                .into_iter()
                .map(|op| (op, (*class).to_owned()))
        })
        .collect();
    assert_eq!(
        calls,
        [
            ("1".to_owned(), "call acquire landed".to_owned()),
            ("4".to_owned(), "call acquire landed".to_owned()),
            ("9".to_owned(), "call acquire refused".to_owned()),
        ]
    );
    // A lease call ticks no record on the ledger lane.
    assert_eq!(attributes(&svg, "record", "data-op"), ["2", "3", "5"]);
}

/// Two evidence operations a few ms apart on one lane get their labels on two rows, not one
/// over the other.
#[test]
fn evidence_labels_close_together_on_a_lane_take_separate_rows() {
    let history = history();
    let evidence = violation("close", vec![Evidence::Op(1), Evidence::Op(2)]);
    let highlight = Highlight::of_violations("EXCL", &evidence, &history);
    let svg = render(&history, "t", &highlight);
    let ys: Vec<String> = svg
        .split("<text")
        .filter(|t| t.contains("op 1 acquire") || t.contains("op 2 open"))
        .filter_map(|t| t.split("y=\"").nth(1)?.split('"').next().map(str::to_owned))
        .collect();
    assert_eq!(ys.len(), 2, "{ys:?}");
    assert_ne!(ys[0], ys[1]);
}

/// A LIVE violation's evidence names the acquire turned away after the heal, and the
/// timeline rings it (LIVE had named nothing, so its timeline ringed nothing): the fixture
/// runs on to 20 s, and replica-1 is refused s1 at 11 s, after the leases from before the
/// heal at 6.2 s ran out (6.2 + 3 s TTL + 1 s renew interval) and before the bound (6.5 s)
/// ran out, with no acknowledged append in the window.
#[test]
fn a_live_violation_rings_the_refused_acquire() {
    let refused = r#"{"v":1,"kind":"op","id":9,"process":{"replica":"replica-1","incarnation":0},"session":"s1","op":{"type":"lease_acquire","owner":{"replica":"replica-1","incarnation":0}},"invoke_us":11000000,"complete_us":11010000,"invoke_local_us":8800000,"complete_local_us":8808000,"outcome":"fail","result":{"type":"held","holder_token":2}}"#;
    let text = HISTORY
        .replace(
            "\"name\":\"run_ended\",\"at_us\":8000000",
            "\"name\":\"run_ended\",\"at_us\":20000000",
        )
        .replacen(
            "\n{\"v\":1,\"kind\":\"decision\"",
            &format!("\n{refused}\n{{\"v\":1,\"kind\":\"decision\""),
            1,
        );
    let history = History::read_jsonl(text.as_bytes(), "history.jsonl").expect("a history");
    let report = leasesim_check::invariants::live::check(&history);
    assert_eq!(report.violations.len(), 1, "{:?}", report.violations);
    // What a campaign records of it (`check_records`).
    let violations: Vec<ViolationRecord> = report.violations.iter().map(Into::into).collect();
    assert_eq!(
        violations[0].found().collect::<Vec<_>>(),
        [&Evidence::Op(9)]
    );
    let highlight = Highlight::of_violations("LIVE", &violations, &history);
    assert_eq!(highlight.ops, [9].into());
    let svg = render(&history, "fixture run on to 20 s", &highlight);
    assert_eq!(attributes(&svg, "evidence", "data-op"), ["9"]);
    assert!(texts(&svg).iter().any(|t| t == "LIVE violated"), "{svg}");
}

/// Each kind of evidence highlights what its data names: a holder's window the op it starts
/// at, a decision a moment on the authority's lane, a validity check one on its replica's
/// (by host, whatever its incarnation), a write nothing (it has no lane), and a line of prose
/// from a results.jsonl of version 1 nothing at all, whatever it says.
#[test]
fn each_kind_of_evidence_highlights_what_its_data_names() {
    let history = history();
    let mut violations = violation(
        "every kind",
        vec![
            Evidence::Window {
                process: Process::new("replica-2", 0),
                session: "s1".into(),
                token: 2,
                op: 5,
                from_us: 4_530_000,
                until_us: 7_510_000,
            },
            Evidence::Decision {
                session: "s1".into(),
                owner: Process::new("replica-2", 0),
                at_authority_us: 4_510_000,
                at_us: 4_510_250,
            },
            Evidence::Validity {
                process: Process::new("replica-1", 2),
                session: "s1".into(),
                at_local_us: 1_000,
                at_us: 2_000,
            },
            Evidence::Write {
                session: "s1".into(),
                verb: leasesim_history::WriteVerb::Update,
                holder_identity: "replica-2".into(),
                transitions: 2,
                resource_version: 9,
                at_us: 4_600_000,
            },
        ],
    );
    violations[0]
        .evidence
        .push(EvidenceRecord::Written("op 3 and ledger s1 seq 2".into()));
    let highlight = Highlight::of_violations("EXCL", &violations, &history);
    assert_eq!(highlight.ops, [5].into());
    assert_eq!(highlight.stuck, None);
    assert!(highlight.prefix.is_empty());
    assert_eq!(
        highlight.instants,
        [
            ("lease".to_owned(), 4_510_250),
            ("replica-1".to_owned(), 2_000)
        ]
        .into()
    );
}

/// The fixture in a world of 100 replicas, with a fault on replica-77 besides those on
/// replica-1 and replica-2.
fn hundred_replica_history() -> History {
    let text = HISTORY.replacen(r#""replicas":2"#, r#""replicas":100"#, 1)
        + r#"{"v":1,"kind":"nemesis","at_us":1000000,"host":"replica-77","action":"crash","peer":null,"detail":null}"#
        + "\n";
    History::read_jsonl(text.as_bytes(), "history.jsonl").expect("a history")
}

#[test]
fn past_32_replicas_the_named_the_struck_and_the_first_keep_lanes_and_the_rest_fold() {
    let history = hundred_replica_history();
    let mut highlight = Highlight::default();
    highlight.instants.insert(("replica-90".into(), 1_000_000));
    let svg = render(&history, "a hundred replicas", &highlight);
    let lanes = attributes(&svg, "lane", "data-host");
    let expected: Vec<String> = (1..=30)
        .map(|n| format!("replica-{n}"))
        .chain(
            [
                "replica-77",
                "replica-90",
                "+68 replicas",
                "lease",
                "ledger",
            ]
            .map(String::from),
        )
        .collect();
    assert_eq!(lanes, expected);
    assert_eq!(
        attributes(&svg, "lane folded", "data-host"),
        ["+68 replicas"]
    );
}

#[test]
fn up_to_32_replicas_every_replica_has_a_lane() {
    let text = HISTORY.replacen(r#""replicas":2"#, r#""replicas":32"#, 1);
    let history = History::read_jsonl(text.as_bytes(), "history.jsonl").expect("a history");
    let svg = render(&history, "32 replicas", &Highlight::default());
    let lanes = attributes(&svg, "lane", "data-host");
    assert_eq!(lanes.len(), 32 + 2);
    assert!(attributes(&svg, "lane folded", "data-host").is_empty());
}
