//! The history format, as a specification: golden lines, round trips, and the errors a bad
//! file gets.

use super::*;

fn p(replica: &str, incarnation: u64) -> Process {
    Process::new(replica, incarnation)
}

fn writer(replica: &str, incarnation: u64, journal: u64) -> HistWriterId {
    HistWriterId {
        owner: p(replica, incarnation),
        journal,
    }
}

fn config() -> ConfigLine {
    ConfigLine {
        ttl_us: 3_000_000,
        skew_margin_us: 300_000,
        renew_interval_us: 1_000_000,
        longest_reconnect_backoff_us: 500_000,
        grace_period_us: 3_000_000,
        mutant: None,
        seed: 7,
        replicas: 3,
        sessions: vec!["s1".into(), "s2".into()],
        authority: Some("lease".into()),
    }
}

fn append_op() -> OpLine {
    OpLine {
        id: 12,
        process: p("replica-1", 0),
        session: "s1".into(),
        op: Op::JournalAppend {
            writer_id: writer("replica-1", 0, 1),
            seq_in_writer: 2,
        },
        invoke_us: 1_500_000,
        complete_us: Some(1_503_000),
        invoke_local_us: 1_500_150,
        complete_local_us: Some(1_503_150),
        outcome: Outcome::Ok,
        result: Some(OpResult::Appended { seq: 4 }),
    }
}

fn decision() -> DecisionLine {
    DecisionLine {
        session: "s1".into(),
        owner: p("replica-2", 1),
        decision: Decision::Grant {
            token: 3,
            expiry_authority_us: 7_000_000,
            ttl_us: 3_000_000,
        },
        at_authority_us: 4_000_000,
        at_us: 4_000_020,
    }
}

fn validity() -> ValidityLine {
    ValidityLine {
        process: p("replica-1", 0),
        session: "s1".into(),
        purpose: HistLeaseUse::JournalOpen,
        epoch: 2,
        at_local_us: 1_500_150,
        at_us: 1_500_000,
        valid_until_local_us: 3_700_000,
    }
}

fn phase() -> PhaseLine {
    PhaseLine {
        name: Phase::FaultsHealed,
        at_us: 30_000_000,
    }
}

fn clock() -> ClockLine {
    ClockLine {
        host: "lease".into(),
        boot: 0,
        from_us: 0,
        local_from_us: 0,
        drift_ppm: -200,
        suspended: false,
    }
}

fn ledger() -> LedgerLine {
    LedgerLine {
        session: "s1".into(),
        seq: 4,
        record: HistRecord::Event {
            writer_id: writer("replica-1", 0, 1),
            seq_in_writer: 2,
            payload: b"hi\x00\xff".to_vec(),
        },
    }
}

fn event() -> EventLine {
    EventLine {
        at_us: 12_500_000,
        host: "replica-2".into(),
        event: HistEvent::RunCancelledOnLoss,
    }
}

fn write() -> WriteLine {
    WriteLine {
        host: "apiserver".into(),
        session: "s1".into(),
        object: "s1-0f3a9c2e".into(),
        verb: WriteVerb::Update,
        holder_identity: "replica-2#0".into(),
        transitions: 2,
        resource_version: 17,
        at_us: 12_000_000,
    }
}

/// One line of each kind, with the exact JSON it must produce.
fn golden() -> Vec<(Line, &'static str)> {
    vec![
        (
            config().into(),
            r#"{"v":1,"kind":"config","ttl_us":3000000,"skew_margin_us":300000,"renew_interval_us":1000000,"longest_reconnect_backoff_us":500000,"grace_period_us":3000000,"mutant":null,"seed":7,"replicas":3,"sessions":["s1","s2"],"authority":"lease"}"#,
        ),
        (
            append_op().into(),
            r#"{"v":1,"kind":"op","id":12,"process":{"replica":"replica-1","incarnation":0},"session":"s1","op":{"type":"journal_append","writer_id":{"owner":{"replica":"replica-1","incarnation":0},"journal":1},"seq_in_writer":2},"invoke_us":1500000,"complete_us":1503000,"invoke_local_us":1500150,"complete_local_us":1503150,"outcome":"ok","result":{"type":"appended","seq":4}}"#,
        ),
        (
            decision().into(),
            r#"{"v":1,"kind":"decision","session":"s1","owner":{"replica":"replica-2","incarnation":1},"decision":{"type":"grant","token":3,"expiry_authority_us":7000000,"ttl_us":3000000},"at_authority_us":4000000,"at_us":4000020}"#,
        ),
        (
            validity().into(),
            r#"{"v":1,"kind":"validity","process":{"replica":"replica-1","incarnation":0},"session":"s1","purpose":"journal_open","epoch":2,"at_local_us":1500150,"at_us":1500000,"valid_until_local_us":3700000}"#,
        ),
        (
            phase().into(),
            r#"{"v":1,"kind":"phase","name":"faults_healed","at_us":30000000}"#,
        ),
        (
            clock().into(),
            r#"{"v":1,"kind":"clock","host":"lease","boot":0,"from_us":0,"local_from_us":0,"drift_ppm":-200,"suspended":false}"#,
        ),
        (
            ledger().into(),
            r#"{"v":1,"kind":"ledger","session":"s1","seq":4,"record":{"type":"event","writer_id":{"owner":{"replica":"replica-1","incarnation":0},"journal":1},"seq_in_writer":2,"payload_hex":"686900ff"}}"#,
        ),
        (
            event().into(),
            r#"{"v":1,"kind":"event","at_us":12500000,"host":"replica-2","event":"run_cancelled_on_loss"}"#,
        ),
        (
            write().into(),
            r#"{"v":1,"kind":"write","host":"apiserver","session":"s1","object":"s1-0f3a9c2e","verb":"update","holder_identity":"replica-2#0","transitions":2,"resource_version":17,"at_us":12000000}"#,
        ),
        (
            NemesisLine {
                at_us: 5_000_123,
                host: "replica-1".into(),
                action: NemesisAction::Sigstop,
                peer: None,
                detail: Some("pause for 5000 ms".into()),
            }
            .into(),
            r#"{"v":1,"kind":"nemesis","at_us":5000123,"host":"replica-1","action":"sigstop","peer":null,"detail":"pause for 5000 ms"}"#,
        ),
        (
            WorkLine {
                process: Process::new("replica-1", 0),
                session: "s1".into(),
                state: WorkState::Taken,
                at_us: 3_000_000,
            }
            .into(),
            r#"{"v":1,"kind":"work","process":{"replica":"replica-1","incarnation":0},"session":"s1","state":"taken","at_us":3000000}"#,
        ),
    ]
}

#[test]
fn each_kind_of_line_has_a_pinned_json_form() {
    for (line, json) in golden() {
        assert_eq!(
            line.to_json(),
            json,
            "golden JSON of a {} line",
            line.kind()
        );
        assert_eq!(Line::from_json(json), Ok(line));
    }
    let kinds: Vec<&str> = golden().iter().map(|(line, _)| line.kind()).collect();
    assert_eq!(kinds, Line::KINDS, "one golden line per kind, in order");
}

#[test]
fn a_validity_line_without_a_purpose_is_an_append() {
    let json = r#"{"v":1,"kind":"validity","process":{"replica":"replica-1","incarnation":0},"session":"s1","epoch":2,"at_local_us":1500150,"at_us":1500000,"valid_until_local_us":3700000}"#;
    let append = ValidityLine {
        purpose: HistLeaseUse::Append,
        ..validity()
    };
    assert_eq!(Line::from_json(json), Ok(append.into()));
}

/// The fence record of replica-2's journal 1 at epoch 3.
fn fence() -> HistRecord {
    HistRecord::Fence {
        epoch: 3,
        owner: p("replica-2", 1),
        writer_id: writer("replica-2", 1, 1),
    }
}

/// One operation of each kind.
fn every_op() -> Vec<Op> {
    vec![
        Op::LeaseAcquire {
            owner: p("replica-2", 1),
        },
        Op::LeaseRenew {
            owner: p("replica-2", 1),
            token: 3,
        },
        Op::LeaseRelease {
            owner: p("replica-1", 0),
            token: 2,
        },
        Op::LedgerTip {},
        Op::LedgerAppend {
            expected: 4,
            record: fence(),
        },
        Op::JournalOpen { epoch: 3 },
        Op::KubeGet {},
        Op::KubeCreate {
            holder_identity: "replica-2#1".into(),
            transitions: 1,
        },
        Op::KubeUpdate {
            expected_rv: Some(16),
            holder_identity: String::new(),
            transitions: 2,
        },
        Op::KubeUpdate {
            expected_rv: None,
            holder_identity: "replica-1#0".into(),
            transitions: 3,
        },
        Op::KubeDelete {
            expected_rv: Some(17),
        },
        Op::TargetGet {},
        Op::TargetSignal {},
    ]
}

/// One result of each kind a lease call gives, with its outcome.
fn lease_results() -> Vec<(Outcome, OpResult)> {
    vec![
        (
            Outcome::Ok,
            OpResult::Granted {
                token: 3,
                expiry_authority_us: 7_000_000,
                ttl_us: 3_000_000,
            },
        ),
        (Outcome::Ok, OpResult::Released {}),
        (
            Outcome::Fail,
            OpResult::Held {
                holder_token: Some(4),
            },
        ),
        (Outcome::Fail, OpResult::Held { holder_token: None }),
        (Outcome::Fail, OpResult::Unsupported {}),
        (
            Outcome::Info,
            OpResult::Unavailable {
                reason: "timeout".into(),
            },
        ),
        (
            Outcome::Fail,
            OpResult::Invalid {
                reason: "too big".into(),
            },
        ),
    ]
}

/// One result of each kind a ledger call gives, with its outcome.
fn ledger_results() -> Vec<(Outcome, OpResult)> {
    vec![
        (Outcome::Ok, OpResult::Tip { seq: 4 }),
        (Outcome::Fail, OpResult::Conflict { actual: 5 }),
        (
            Outcome::Info,
            OpResult::Unknown {
                reason: "reset".into(),
            },
        ),
    ]
}

/// One result of each kind a journal call gives, with its outcome.
fn journal_results() -> Vec<(Outcome, OpResult)> {
    vec![
        (
            Outcome::Ok,
            OpResult::Opened {
                writer_id: writer("replica-2", 1, 1),
                fence_seq: 5,
            },
        ),
        (
            Outcome::Fail,
            OpResult::StaleEpoch {
                epoch: 2,
                highest_fence: 3,
            },
        ),
        (Outcome::Fail, OpResult::FenceContention { attempts: 8 }),
        (
            Outcome::Fail,
            OpResult::Fenced {
                expected: 4,
                actual: 5,
            },
        ),
        (
            Outcome::Info,
            OpResult::Ambiguous {
                expected: 4,
                reason: "not visible".into(),
            },
        ),
        (
            Outcome::Fail,
            OpResult::LeaseLost {
                cause: HistLossCause::Released {},
            },
        ),
        (
            Outcome::Fail,
            OpResult::LeaseLost {
                cause: HistLossCause::Overtaken {
                    holder_token: Some(3),
                },
            },
        ),
        (
            Outcome::Fail,
            OpResult::LeaseLost {
                cause: HistLossCause::Deadline {
                    valid_until_local_us: 3_700_000,
                },
            },
        ),
        (
            Outcome::Fail,
            OpResult::Poisoned {
                first: "fenced".into(),
            },
        ),
    ]
}

/// The harness's cut-off, and one result of each kind the Kubernetes API server and a
/// target give, with its outcome.
fn other_results() -> Vec<(Outcome, OpResult)> {
    vec![
        (
            Outcome::Info,
            OpResult::CutOff {
                reason: "crash".into(),
            },
        ),
        (
            Outcome::Ok,
            OpResult::KubeObject {
                resource_version: 17,
                holder_identity: "replica-2#1".into(),
                transitions: 2,
            },
        ),
        (Outcome::Ok, OpResult::KubeNotFound {}),
        (Outcome::Fail, OpResult::KubeConflict {}),
        (
            Outcome::Info,
            OpResult::KubeStatus {
                code: 500,
                reason: "InternalError".into(),
            },
        ),
        (Outcome::Ok, OpResult::Signal { leads: true }),
    ]
}

/// One operation line per result (each result's outcome, the operations in turn) from id
/// 101, then one still pending.
fn push_every_result(history: &mut History) {
    let ops = every_op();
    let results = [
        lease_results(),
        ledger_results(),
        journal_results(),
        other_results(),
    ]
    .concat();
    let mut id = 100;
    for (i, (outcome, result)) in results.into_iter().enumerate() {
        id += 1;
        history.push(OpLine {
            id,
            op: ops[i % ops.len()].clone(),
            outcome,
            result: Some(result),
            complete_local_us: None,
            ..append_op()
        });
    }
    history.push(OpLine {
        id: id + 1,
        complete_us: None,
        complete_local_us: None,
        outcome: Outcome::Info,
        result: None,
        ..append_op()
    });
}

/// One decision of each kind but the grant (the golden decision line's).
fn every_other_decision() -> Vec<Decision> {
    vec![
        Decision::Renew {
            token: 3,
            expiry_authority_us: 8_000_000,
            ttl_us: 3_000_000,
        },
        Decision::Release {
            token: 3,
            ended: true,
        },
        Decision::Release {
            token: 2,
            ended: false,
        },
        Decision::Refuse {
            request: Request::Acquire,
            token: None,
            reason: Refusal::Held {
                holder_token: Some(3),
            },
        },
        Decision::Refuse {
            request: Request::Renew,
            token: Some(2),
            reason: Refusal::GracePeriod {
                remaining_authority_us: 1_000_000,
            },
        },
        Decision::Refuse {
            request: Request::Release,
            token: Some(2),
            reason: Refusal::Unavailable {
                reason: "storage".into(),
            },
        },
    ]
}

/// Every variant of every enum in the format, at least once.
fn everything() -> History {
    let mut history = History::new("everything.jsonl");
    history.push(ConfigLine {
        mutant: Some("token-not-advanced-on-expiry".into()),
        seed: u64::MAX,
        ..config()
    });
    for (_, json) in golden() {
        let line = Line::from_json(json).expect("golden lines parse");
        if line.kind() != "config" {
            history.push(line);
        }
    }
    for kind in [
        HistEvent::RunCancelledOnLoss,
        HistEvent::StickyDisable,
        HistEvent::RecordDeleted,
        HistEvent::BackwardWallJump,
    ] {
        history.push(EventLine {
            event: kind,
            ..event()
        });
    }
    for verb in [WriteVerb::Create, WriteVerb::Update, WriteVerb::Delete] {
        history.push(WriteLine { verb, ..write() });
    }
    push_every_result(&mut history);
    for kind in every_other_decision() {
        history.push(DecisionLine {
            decision: kind,
            ..decision()
        });
    }
    history.push(PhaseLine {
        name: Phase::RunEnded,
        at_us: 60_000_000,
    });
    history.push(ClockLine {
        from_us: 10_000_000,
        local_from_us: 9_998_000,
        suspended: true,
        ..clock()
    });
    history.push(ClockLine {
        boot: 1,
        from_us: 12_000_000,
        local_from_us: 0,
        drift_ppm: 0,
        ..clock()
    });
    history.push(LedgerLine {
        seq: 5,
        record: fence(),
        ..ledger()
    });
    history.push(LedgerLine {
        session: "s2".into(),
        seq: 1,
        record: HistRecord::Event {
            writer_id: writer("replica-3", 0, 1),
            seq_in_writer: 1,
            payload: Vec::new(),
        },
    });
    history
}

#[test]
fn every_line_round_trips_through_jsonl() {
    let history = everything();
    history.validate().expect("a valid history");
    let text = history.to_jsonl();
    assert_eq!(text.lines().count(), history.lines().len());
    assert!(text.ends_with('\n'), "every line ends with a newline");
    let read = History::read_jsonl(text.as_bytes(), "everything.jsonl").expect("reads back");
    assert_eq!(read, history);
}

#[test]
fn writing_is_deterministic_and_whitespace_free() {
    let history = everything();
    let once = history.to_jsonl();
    assert_eq!(once, history.clone().to_jsonl());
    let mut writer = HistoryWriter::new(Vec::new());
    for line in history.lines() {
        writer.write(line).expect("memory");
    }
    assert_eq!(writer.lines_written(), history.lines().len() as u64);
    assert_eq!(writer.into_inner().expect("memory"), once.as_bytes());
    assert!(
        !once.contains(": ") && !once.contains(", "),
        "no whitespace"
    );
    assert!(
        !once.contains('.'),
        "no floats (no dots anywhere in this history)"
    );
}

#[test]
fn a_ledger_payload_is_written_as_lowercase_hex() {
    let json = Line::from(ledger()).to_json();
    assert!(json.contains(r#""payload_hex":"686900ff""#), "{json}");
}

#[test]
fn payload_hex_has_one_spelling() {
    let line = |hex: &str| {
        Line::from_json(&format!(
            r#"{{"v":1,"kind":"ledger","session":"s","seq":1,"record":{{"type":"event","writer_id":{{"owner":{{"replica":"r","incarnation":0}},"journal":1}},"seq_in_writer":1,"payload_hex":"{hex}"}}}}"#
        ))
    };
    assert!(line("00ff").is_ok());
    assert!(line("").is_ok());
    let upper = line("00FF").unwrap_err().to_string();
    assert!(upper.contains("only lowercase hex digits"), "{upper}");
    let odd = line("0ff").unwrap_err().to_string();
    assert!(odd.contains("payload_hex has 3 digits"), "{odd}");
}

// ---- Bad input: every error names the file and the 1-based line, and never panics. ----

/// Reads `text` as `bad.jsonl` and returns the error message.
fn read_error(text: &str) -> (HistoryError, String) {
    let error = History::read_jsonl(text.as_bytes(), "bad.jsonl").expect_err("must be refused");
    let message = error.to_string();
    (error, message)
}

fn config_json() -> String {
    Line::from(config()).to_json()
}

#[test]
fn a_missing_field_names_the_line_and_the_field() {
    let text = format!(
        "{}\n{}\n",
        config_json(),
        r#"{"v":1,"kind":"phase","name":"faults_healed"}"#
    );
    let (error, message) = read_error(&text);
    assert_eq!(error.line(), Some(2));
    assert_eq!(
        message,
        "bad.jsonl:2: bad phase line: missing field `at_us`"
    );
}

#[test]
fn a_wrong_or_missing_schema_version_is_refused() {
    let v2 = config_json().replacen(r#""v":1"#, r#""v":2"#, 1);
    let (_, message) = read_error(&v2);
    assert_eq!(
        message,
        "bad.jsonl:1: schema version v = 2; this reader reads v = 1"
    );
    let quoted = config_json().replacen(r#""v":1"#, r#""v":"1""#, 1);
    assert_eq!(
        read_error(&quoted).1,
        r#"bad.jsonl:1: schema version v = "1"; this reader reads v = 1"#
    );
    let none = r#"{"kind":"phase","name":"faults_healed","at_us":1}"#;
    assert_eq!(
        read_error(none).1,
        "bad.jsonl:1: no schema version `v`; this reader reads v = 1"
    );
}

#[test]
fn garbage_is_refused_with_the_parsers_complaint() {
    let text = format!("{}\ngarbage\n", config_json());
    let (error, message) = read_error(&text);
    assert!(matches!(error.problem(), Some(LineProblem::NotJson { .. })));
    assert_eq!(message, "bad.jsonl:2: not JSON: expected value (column 1)");
    assert_eq!(read_error("[1,2]").1, "bad.jsonl:1: not a JSON object");
    let truncated = &config_json()[..40];
    assert!(
        read_error(truncated)
            .1
            .starts_with("bad.jsonl:1: not JSON: EOF while parsing"),
    );
    let binary = History::read_jsonl(&b"\xff\xfe\n"[..], "bad.jsonl").unwrap_err();
    assert_eq!(binary.to_string(), "bad.jsonl:1: not UTF-8");
}

#[test]
fn empty_lines_are_not_allowed_anywhere() {
    let text = format!("{}\n\n{}\n", config_json(), Line::from(phase()).to_json());
    let (error, message) = read_error(&text);
    assert_eq!(error.problem(), Some(&LineProblem::Empty));
    assert_eq!(
        message,
        "bad.jsonl:2: empty line; a history has none (every line is one JSON object)"
    );
    assert_eq!(
        read_error(&format!("{}\n  \n", config_json())).0.line(),
        Some(2)
    );
}

#[test]
fn an_empty_file_is_an_empty_history_and_the_last_newline_is_optional() {
    let empty = History::read_jsonl(&b""[..], "empty.jsonl").expect("empty is fine");
    assert!(empty.lines().is_empty());
    assert_eq!(
        empty.config().unwrap_err().to_string(),
        "empty.jsonl: no config line; a history has exactly one"
    );
    let no_newline = History::read_jsonl(config_json().as_bytes(), "h").expect("reads");
    assert_eq!(no_newline.config().expect("one config"), &config());
}

#[test]
fn unknown_kinds_and_unknown_fields_are_refused() {
    let kind = r#"{"v":1,"kind":"opp","id":1}"#;
    assert_eq!(
        read_error(kind).1,
        r#"bad.jsonl:1: unknown kind "opp"; expected one of config, op, decision, validity, phase, clock, ledger, event, write, nemesis, work"#
    );
    assert!(
        read_error(r#"{"v":1}"#)
            .1
            .starts_with("bad.jsonl:1: no `kind`; expected one of config, op,")
    );
    let extra = Line::from(phase())
        .to_json()
        .replacen(r#""at_us""#, r#""extra":0,"at_us""#, 1);
    assert!(
        read_error(&extra)
            .1
            .starts_with("bad.jsonl:1: bad phase line: unknown field `extra`"),
    );
    let tip = Line::from(OpLine {
        op: Op::LedgerTip {},
        ..append_op()
    })
    .to_json()
    .replacen(
        r#"{"type":"ledger_tip"}"#,
        r#"{"type":"ledger_tip","expected":0}"#,
        1,
    );
    assert!(
        read_error(&tip)
            .1
            .starts_with("bad.jsonl:1: bad op line: unknown field `expected`"),
        "{}",
        read_error(&tip).1
    );
    let variant = Line::from(append_op())
        .to_json()
        .replacen("journal_append", "journal_apend", 1);
    assert!(
        read_error(&variant)
            .1
            .starts_with("bad.jsonl:1: bad op line: unknown variant `journal_apend`"),
    );
}

/// Each nemesis action's name in a history, as the format doc lists them.
const ACTION_NAMES: [(NemesisAction, &str); 34] = [
    (NemesisAction::Pause, "pause"),
    (NemesisAction::Suspend, "suspend"),
    (NemesisAction::Stall, "stall"),
    (NemesisAction::WorkerPanic, "worker_panic"),
    (NemesisAction::Resume, "resume"),
    (NemesisAction::Crash, "crash"),
    (NemesisAction::Restart, "restart"),
    (NemesisAction::Isolate, "isolate"),
    (NemesisAction::DelayReplies, "delay_replies"),
    (NemesisAction::Deliver, "deliver"),
    (NemesisAction::HoldReplies, "hold_replies"),
    (NemesisAction::ReleaseReplies, "release_replies"),
    (NemesisAction::ClockDrift, "clock_drift"),
    (NemesisAction::WallJump, "wall_jump"),
    (NemesisAction::WallOffset, "wall_offset"),
    (NemesisAction::DeleteLeaseRecord, "delete_lease_record"),
    (NemesisAction::AuthorityErrors, "authority_errors"),
    (NemesisAction::Serve, "serve"),
    (NemesisAction::AimAtHolder, "aim_at_holder"),
    (NemesisAction::Fork, "fork"),
    (NemesisAction::Partition, "partition"),
    (NemesisAction::PartitionOneWay, "partition_one_way"),
    (NemesisAction::Hold, "hold"),
    (NemesisAction::Release, "release"),
    (NemesisAction::Latency, "latency"),
    (NemesisAction::LinkFlaps, "link_flaps"),
    (NemesisAction::Heal, "heal"),
    (NemesisAction::Sigstop, "sigstop"),
    (NemesisAction::Sigcont, "sigcont"),
    (NemesisAction::Sigkill, "sigkill"),
    (NemesisAction::Start, "start"),
    (NemesisAction::Reset, "reset"),
    (NemesisAction::Clock, "clock"),
    (NemesisAction::Dropped, "dropped"),
];

#[test]
fn each_nemesis_action_has_its_name() {
    let listed: Vec<NemesisAction> = ACTION_NAMES.iter().map(|(action, _)| *action).collect();
    assert_eq!(
        listed,
        NemesisAction::ALL,
        "every action, in declaration order"
    );
    for (action, name) in ACTION_NAMES {
        assert_eq!(action.as_str(), name);
        assert_eq!(action.to_string(), name);
        assert_eq!(
            serde_json::to_string(&action).expect("serialises"),
            format!("\"{name}\"")
        );
        assert_eq!(
            serde_json::from_str::<NemesisAction>(&format!("\"{name}\"")).expect("parses"),
            action
        );
    }
}

#[test]
fn a_nemesis_line_with_each_action_round_trips() {
    for (action, name) in ACTION_NAMES {
        let line = Line::from(NemesisLine {
            at_us: 1_500_000,
            host: "replica-2".into(),
            action,
            peer: Some("lease".into()),
            detail: None,
        });
        let json = line.to_json();
        assert_eq!(
            json,
            format!(
                r#"{{"v":1,"kind":"nemesis","at_us":1500000,"host":"replica-2","action":"{name}","peer":"lease","detail":null}}"#
            )
        );
        assert_eq!(Line::from_json(&json), Ok(line));
    }
}

#[test]
fn an_unknown_nemesis_action_is_refused_naming_the_known_ones() {
    let sigstop = r#"{"v":1,"kind":"nemesis","at_us":0,"host":"replica-1","action":"sigstp","peer":null,"detail":null}"#;
    let message = read_error(sigstop).1;
    assert!(
        message.starts_with(
            "bad.jsonl:1: bad nemesis line: unknown variant `sigstp`, expected one of `pause`, `suspend`,"
        ),
        "{message}"
    );
    for (_, name) in ACTION_NAMES {
        assert!(
            message.contains(&format!("`{name}`")),
            "{name} missing: {message}"
        );
    }
}

#[test]
fn an_old_history_s_apiserver_errors_is_authority_errors() {
    let old = r#"{"v":1,"kind":"nemesis","at_us":0,"host":"apiserver","action":"apiserver_errors","peer":null,"detail":null}"#;
    let Ok(Line::Nemesis(line)) = Line::from_json(old) else {
        panic!("an old history's apiserver_errors line is read");
    };
    assert_eq!(line.action, NemesisAction::AuthorityErrors);
}

#[test]
fn wrong_types_are_refused() {
    let negative = Line::from(phase()).to_json().replacen("30000000", "-1", 1);
    assert!(
        read_error(&negative)
            .1
            .starts_with("bad.jsonl:1: bad phase line: invalid value: integer `-1`"),
    );
    let float = Line::from(phase()).to_json().replacen("30000000", "3.5", 1);
    assert!(
        read_error(&float)
            .1
            .starts_with("bad.jsonl:1: bad phase line: invalid type: floating point `3.5`"),
    );
}

#[test]
fn op_ids_are_unique() {
    let op = Line::from(append_op()).to_json();
    let text = format!("{}\n{op}\n{op}\n", config_json());
    assert_eq!(
        read_error(&text).1,
        "bad.jsonl:3: op id 12 is already used on line 2; op ids are unique"
    );
}

#[test]
fn a_pending_op_is_info_without_completion_or_result() {
    let pending = OpLine {
        complete_us: None,
        complete_local_us: None,
        outcome: Outcome::Info,
        result: None,
        ..append_op()
    };
    let ok = History::from_lines("h", vec![pending.clone().into()]);
    assert!(ok.validate().is_ok());
    assert!(pending.is_pending());
    let claims_ok = OpLine {
        outcome: Outcome::Ok,
        ..pending.clone()
    };
    let history = History::from_lines("h.jsonl", vec![config().into(), claims_ok.into()]);
    assert_eq!(
        history.validate().unwrap_err().to_string(),
        "h.jsonl:2: op 12 is pending (complete_us is null) but its outcome is not info"
    );
    let with_result = OpLine {
        result: Some(OpResult::Appended { seq: 4 }),
        ..pending
    };
    let history = History::from_lines("h.jsonl", vec![with_result.into()]);
    assert!(
        history
            .validate()
            .unwrap_err()
            .to_string()
            .ends_with("but it has a result")
    );
}

#[test]
fn there_is_exactly_one_config_line() {
    let text = format!(
        "{}\n{}\n{}\n",
        config_json(),
        Line::from(phase()).to_json(),
        config_json()
    );
    assert_eq!(
        read_error(&text).1,
        "bad.jsonl:3: a second config line (the first is line 1); a history has exactly one"
    );
    let two = History::from_lines("mem", vec![config().into(), config().into()]);
    assert_eq!(two.config().unwrap_err().line(), Some(2));
    let none = History::from_lines("mem", vec![phase().into()]);
    assert!(matches!(
        none.config(),
        Err(HistoryError::MissingConfig { .. })
    ));
}

#[test]
fn clock_segments_must_continue_their_hosts_map() {
    let later = Line::from(ClockLine {
        from_us: 5_000,
        ..clock()
    });
    let other_host = Line::from(ClockLine {
        host: "ledger".into(),
        ..clock()
    });
    let earlier = Line::from(clock());
    let text = [config().into(), later, other_host, earlier]
        .iter()
        .map(|line: &Line| line.to_json() + "\n")
        .collect::<String>();
    assert_eq!(
        read_error(&text).1,
        "bad.jsonl:4: clock segment of host \"lease\" starts at from_us 0, not after the \
         previous segment's 5000"
    );
}

#[test]
fn a_file_that_cannot_be_opened_is_an_io_error_naming_it() {
    let error = History::read_jsonl_path("/nonexistent/history.jsonl").unwrap_err();
    assert!(matches!(error, HistoryError::Io { .. }));
    assert!(
        error
            .to_string()
            .starts_with("/nonexistent/history.jsonl:1: cannot read:"),
        "{error}"
    );
}

#[test]
fn a_file_reads_back_under_its_path() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("history.jsonl");
    let history = everything();
    history
        .write_jsonl(std::fs::File::create(&path).expect("create"))
        .expect("write");
    let read = History::read_jsonl_path(&path).expect("read");
    assert_eq!(read.lines(), history.lines());
    assert_eq!(read.name(), path.display().to_string());
}

// ---- Accessors the checkers use. ----

#[test]
fn accessors_select_lines_by_kind_in_order() {
    let history = everything();
    assert_eq!(history.config().expect("one").seed, u64::MAX);
    assert_eq!(history.ops().count(), 27);
    assert_eq!(history.ops().next(), Some(&append_op()));
    assert_eq!(history.ops().filter(|op| op.is_pending()).count(), 1);
    assert_eq!(history.decisions().count(), 7);
    assert_eq!(history.validity_checks().collect::<Vec<_>>(), [&validity()]);
    assert_eq!(history.phase_at_us(Phase::FaultsHealed), Some(30_000_000));
    assert_eq!(history.phase_at_us(Phase::RunEnded), Some(60_000_000));
    assert_eq!(history.clock_segments().count(), 3);
    let verbs: Vec<WriteVerb> = history.writes().map(|write| write.verb).collect();
    assert_eq!(
        verbs,
        [
            WriteVerb::Update,
            WriteVerb::Create,
            WriteVerb::Update,
            WriteVerb::Delete
        ]
    );
}

#[test]
fn the_final_ledger_is_grouped_by_session_in_line_order() {
    let ledger = everything().final_ledger();
    assert_eq!(ledger.keys().collect::<Vec<_>>(), ["s1", "s2"]);
    let s1: Vec<u64> = ledger["s1"].iter().map(|(seq, _)| *seq).collect();
    assert_eq!(s1, [4, 5]);
    assert_eq!(ledger["s1"][1].1.fence_epoch(), Some(3));
    assert_eq!(ledger["s2"][0].1.writer_id(), &writer("replica-3", 0, 1));
}

#[test]
fn clock_maps_are_built_per_host() {
    let maps = everything().clock_maps().expect("valid segments");
    assert_eq!(maps.keys().collect::<Vec<_>>(), ["lease"]);
    let lease = &maps["lease"];
    assert_eq!(lease.segments().len(), 3);
    assert_eq!(lease.local_at(10_000_000), Some(9_998_000)); // −200 ppm for 10 s
    assert_eq!(lease.local_at(11_000_000), Some(9_998_000)); // suspended
    assert_eq!(lease.local_at(12_000_001), Some(1)); // restarted
    assert_eq!(lease.true_at_in_boot(1, 1), Some(12_000_001));
}

#[test]
fn every_example_in_the_format_documentation_is_a_valid_line_in_canonical_form() {
    let examples: Vec<&str> = include_str!("lib.rs")
        .lines()
        .filter_map(|line| line.strip_prefix("//! {\"v\""))
        .collect();
    assert!(examples.len() >= 9, "found {} examples", examples.len());
    let mut kinds = std::collections::BTreeSet::new();
    for rest in examples {
        let json = format!("{{\"v\"{rest}");
        let line = Line::from_json(&json).unwrap_or_else(|e| panic!("{json}: {e}"));
        assert_eq!(line.to_json(), json, "documented example is canonical");
        kinds.insert(line.kind());
    }
    assert_eq!(
        kinds.len(),
        Line::KINDS.len(),
        "every kind is documented by example"
    );
}

#[test]
fn validation_reports_the_earliest_bad_line_of_any_sort() {
    let bad_clock = ClockLine {
        drift_ppm: -1_000_000,
        ..clock()
    };
    let history = History::from_lines(
        "h.jsonl",
        vec![config().into(), bad_clock.into(), config().into()],
    );
    assert_eq!(history.validate().unwrap_err().line(), Some(2));
    assert_eq!(history.clock_maps().unwrap_err().line(), Some(2));
}

// ---- Times (bad-input probe D1, D2). ----

/// Every `*_us` value of `value`, nested ones included, by field name.
fn json_times(value: &serde_json::Value, out: &mut Vec<(String, u64)>) {
    match value {
        serde_json::Value::Object(fields) => {
            for (name, field) in fields {
                match field.as_u64() {
                    Some(us) if name.ends_with("_us") => out.push((name.clone(), us)),
                    _ => json_times(field, out),
                }
            }
        }
        serde_json::Value::Array(items) => items.iter().for_each(|item| json_times(item, out)),
        _ => {}
    }
}

#[test]
fn the_time_bound_covers_every_us_field_of_every_kind() {
    for line in everything().lines() {
        let mut expected = Vec::new();
        json_times(&serde_json::to_value(line).unwrap(), &mut expected);
        let mut typed: Vec<(String, u64)> = super::times(line)
            .into_iter()
            .map(|(name, us)| (name.to_string(), us))
            .collect();
        expected.sort();
        typed.sort();
        assert_eq!(typed, expected, "{}", line.to_json());
    }
}

#[test]
fn an_op_completing_before_it_was_invoked_is_refused_with_its_line() {
    let mut text = config_json();
    text.push('\n');
    text.push_str(
        r#"{"v":1,"kind":"op","id":4,"process":{"replica":"replica-1","incarnation":0},"session":"s1","op":{"type":"ledger_tip"},"invoke_us":500,"complete_us":499,"invoke_local_us":500,"complete_local_us":501,"outcome":"ok","result":{"type":"tip","seq":0}}"#,
    );
    let error = History::read_jsonl(text.as_bytes(), "h.jsonl").unwrap_err();
    assert_eq!(
        error.to_string(),
        "h.jsonl:2: op 4 completes at 499 µs, before it was invoked at 500 µs; complete_us must \
         be at least invoke_us"
    );
}

#[test]
fn a_time_at_the_bound_is_refused_and_one_below_it_read() {
    let phase = |at_us: u64| {
        format!(
            "{}\n{{\"v\":1,\"kind\":\"phase\",\"name\":\"run_ended\",\"at_us\":{at_us}}}\n",
            config_json()
        )
    };
    History::read_jsonl(phase(MAX_TIME_US - 1).as_bytes(), "h").expect("below the bound");
    let error = History::read_jsonl(phase(MAX_TIME_US).as_bytes(), "h").unwrap_err();
    assert_eq!(error.line(), Some(2));
    assert_eq!(
        error.problem(),
        Some(&LineProblem::TimeOutOfRange {
            field: "at_us".into(),
            value: MAX_TIME_US
        })
    );
}
