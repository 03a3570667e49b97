//! Generated lease and ledger histories of any length, in our own history format (issue 21:
//! the checker's growth rows). Shared by the check benchmark (`benches/check.rs`, which
//! includes this file) and the tests below it in `tests/check/main.rs`.
//!
//! A small discrete-event simulation: `replicas` processes each run one call at a time, a
//! think time after the previous one returned; a call reaches the authority (or ledger) one
//! latency after it is invoked and returns one latency after that. A reference object applies
//! the calls in the order they reach it, so a history without [`Corruption`] is linearizable
//! by construction, and its operations are recorded with the windows and answers the real
//! clients would see. Deterministic: one ChaCha8 stream from the seed.
//!
//! Times are µs of true time; the `lease` host's clock is true time (one clock line). The
//! reference authority counts a lease live while `now < expiry`; the model accepts either
//! side of an equal reading, so a tie cannot make a correct history fail.

#![allow(dead_code)]

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use leasesim::history::{
    ClockLine, HistRecord, HistWriterId, History, LedgerLine, Line, Op, OpLine, OpResult, Outcome,
    Process,
};
use rand_chacha::ChaCha8Rng;
use rand_core::{RngCore, SeedableRng};

/// The session every generated call is on.
pub const SESSION: &str = "s1";

/// The TTL of every grant, µs (1 s).
pub const TTL_US: u64 = 1_000_000;

/// One wrong answer planted in an otherwise correct history.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Corruption {
    /// Lease: the first acquire at or after this call index that finds another owner's lease
    /// live for at least half a TTL more is granted anyway (a second holder, with a new token).
    DoubleGrant {
        /// Calls before the planted one.
        after: usize,
    },
    /// Ledger: the first tip read at or after this call index, once the tip is at least 1
    /// when it is invoked, answers one less than the tip had then (the read goes backwards).
    StaleTip {
        /// Calls before the planted one.
        after: usize,
    },
}

/// The shape of one generated history.
#[derive(Clone, Copy, Debug)]
pub struct Shape {
    /// Processes calling concurrently.
    pub replicas: usize,
    /// Calls recorded.
    pub ops: usize,
    /// The ChaCha8 seed.
    pub seed: u64,
    /// A planted wrong answer, if any.
    pub corruption: Option<Corruption>,
}

impl Shape {
    /// `ops` correct calls of five replicas from `seed`.
    pub fn new(ops: usize, seed: u64) -> Shape {
        Shape {
            replicas: 5,
            ops,
            seed,
            corruption: None,
        }
    }
}

/// Uniform in `lo..=hi`.
fn between(rng: &mut ChaCha8Rng, lo: u64, hi: u64) -> u64 {
    lo + rng.next_u64() % (hi - lo + 1)
}

/// Whether an event of `per_mille` chance happens.
fn chance(rng: &mut ChaCha8Rng, per_mille: u64) -> bool {
    rng.next_u64() % 1000 < per_mille
}

/// Replica `i`'s process (`replica-1`, …), first incarnation.
fn process(i: usize) -> Process {
    Process::new(format!("replica-{}", i + 1), 0)
}

/// A call scheduled to reach the reference object at `decide_us`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
struct Pending {
    decide_us: u64,
    replica: usize,
    invoke_us: u64,
    complete_us: u64,
}

/// The replicas' pending calls, in the order the object decides them, and the random stream
/// that times them and drives the history's choices.
struct Calls {
    rng: ChaCha8Rng,
    queue: BinaryHeap<Reverse<Pending>>,
}

impl Calls {
    /// The stream of `shape.seed`, and every replica's first call, invoked within `think_us`
    /// of the start.
    fn start(shape: &Shape, think_us: u64) -> Calls {
        let mut calls = Calls {
            rng: ChaCha8Rng::seed_from_u64(shape.seed),
            queue: BinaryHeap::new(),
        };
        for replica in 0..shape.replicas {
            let think = between(&mut calls.rng, 0, think_us);
            calls.schedule(replica, 0, think);
        }
        calls
    }

    /// The next call the object decides.
    fn next(&mut self) -> Pending {
        let Reverse(call) = self
            .queue
            .pop()
            .expect("every replica always has a next call");
        call
    }

    /// Schedules replica `replica`'s next call, invoked `think_us` after `free_us`: it reaches
    /// the object 50–2000 µs later and returns 50–2000 µs after that.
    fn schedule(&mut self, replica: usize, free_us: u64, think_us: u64) {
        let invoke_us = free_us + think_us;
        let decide_us = invoke_us + between(&mut self.rng, 50, 2000);
        let complete_us = decide_us + between(&mut self.rng, 50, 2000);
        self.queue.push(Reverse(Pending {
            decide_us,
            replica,
            invoke_us,
            complete_us,
        }));
    }
}

fn op_line(call: &Pending, op: Op, outcome: Outcome, result: OpResult) -> OpLine {
    OpLine {
        id: 0,
        process: process(call.replica),
        session: SESSION.into(),
        op,
        invoke_us: call.invoke_us,
        complete_us: Some(call.complete_us),
        invoke_local_us: call.invoke_us,
        complete_local_us: Some(call.complete_us),
        outcome,
        result: Some(result),
    }
}

/// The history of `ops` in invocation order, ids from 1, after `prefix`.
fn history(name: &str, prefix: Vec<Line>, mut ops: Vec<OpLine>, suffix: Vec<Line>) -> History {
    ops.sort_by_key(|op| (op.invoke_us, op.process.to_string()));
    let mut lines = prefix;
    for (i, mut op) in ops.into_iter().enumerate() {
        op.id = i as u64 + 1;
        lines.push(Line::Op(op));
    }
    lines.extend(suffix);
    History::from_lines(name, lines)
}

/// The lease record at the reference authority.
#[derive(Clone, Copy, Debug)]
struct Record {
    owner: usize,
    token: u64,
    expiry_us: u64,
}

/// The reference lease authority: the record, and the highest token granted.
#[derive(Default)]
struct Authority {
    record: Option<Record>,
    high_water: u64,
}

/// A grant of `token` decided at `now`.
fn granted(token: u64, now: u64) -> OpResult {
    OpResult::Granted {
        token,
        expiry_authority_us: now + TTL_US,
        ttl_us: TTL_US,
    }
}

impl Authority {
    /// The record, if it is live at `now`.
    fn live(&self, now: u64) -> Option<Record> {
        self.record.filter(|l| l.expiry_us > now)
    }

    /// Replica `r`'s acquire decided at `now`: its own live lease extended, refused while
    /// another's is live (unless `plant`: granted anyway), else a new token.
    fn acquire(&mut self, r: usize, now: u64, plant: bool) -> (Outcome, OpResult) {
        match self.live(now) {
            Some(l) if l.owner == r => {
                self.record = Some(Record {
                    expiry_us: now + TTL_US,
                    ..l
                });
                (Outcome::Ok, granted(l.token, now))
            }
            Some(l) if !plant => (
                Outcome::Fail,
                OpResult::Held {
                    holder_token: Some(l.token),
                },
            ),
            _ => {
                self.high_water += 1;
                self.record = Some(Record {
                    owner: r,
                    token: self.high_water,
                    expiry_us: now + TTL_US,
                });
                (Outcome::Ok, granted(self.high_water, now))
            }
        }
    }

    /// Replica `r`'s release of `token`: the record ends if it is that lease.
    fn release(&mut self, r: usize, token: u64) -> (Outcome, OpResult) {
        if self
            .record
            .is_some_and(|l| l.owner == r && l.token == token)
        {
            self.record = None;
        }
        (Outcome::Ok, OpResult::Released {})
    }

    /// Replica `r`'s renew of `token` decided at `now`: extended while that lease is live,
    /// else refused with the live holder's token.
    fn renew(&mut self, r: usize, token: u64, now: u64) -> (Outcome, OpResult) {
        match self.live(now) {
            Some(l) if l.owner == r && l.token == token => {
                self.record = Some(Record {
                    expiry_us: now + TTL_US,
                    ..l
                });
                (Outcome::Ok, granted(token, now))
            }
            other => (
                Outcome::Fail,
                OpResult::Held {
                    holder_token: other.map(|l| l.token),
                },
            ),
        }
    }
}

/// A lease history: replicas acquire when they hold nothing (again every 100–300 ms while
/// refused), renew every 100–300 ms while they hold, and now and then release (3%) or pause for
/// longer than the TTL (2%, so another replica takes over and the paused one is refused).
/// Every call is answered (no `:info`).
pub fn lease_history(shape: &Shape) -> History {
    let mut calls = Calls::start(shape, 300_000);
    // Per replica: the token of the lease it believes it holds.
    let mut held: Vec<Option<u64>> = vec![None; shape.replicas];
    let mut authority = Authority::default();
    let mut ops = Vec::with_capacity(shape.ops);
    let mut planted = false;
    while ops.len() < shape.ops {
        let call = calls.next();
        let (r, now) = (call.replica, call.decide_us);
        let owner = process(r);
        let (op, (outcome, result)) = match held[r] {
            None => {
                let plant = matches!(shape.corruption, Some(Corruption::DoubleGrant { after })
                    if !planted && ops.len() >= after)
                    && authority.live(now).is_some_and(|l| {
                        l.owner != r && l.expiry_us > call.complete_us + TTL_US / 2
                    });
                planted |= plant;
                (Op::LeaseAcquire { owner }, authority.acquire(r, now, plant))
            }
            Some(token) if chance(&mut calls.rng, 30) => (
                Op::LeaseRelease { owner, token },
                authority.release(r, token),
            ),
            Some(token) => (
                Op::LeaseRenew { owner, token },
                authority.renew(r, token, now),
            ),
        };
        held[r] = match &result {
            OpResult::Granted { token, .. } => Some(*token),
            _ => None,
        };
        let think = if held[r].is_some() && chance(&mut calls.rng, 20) {
            TTL_US + between(&mut calls.rng, 100_000, 500_000)
        } else {
            between(&mut calls.rng, 100_000, 300_000)
        };
        ops.push(op_line(&call, op, outcome, result));
        calls.schedule(r, call.complete_us, think);
    }
    let clock = Line::Clock(ClockLine {
        host: "lease".into(),
        boot: 0,
        from_us: 0,
        local_from_us: 0,
        drift_ppm: 0,
        suspended: false,
    });
    history("generated-lease", vec![clock], ops, Vec::new())
}

/// What a ledger replica does next.
#[derive(Clone, Copy, Debug)]
enum Next {
    /// Read the tip.
    Tip,
    /// Append at this tip.
    Append { expected: u64 },
}

/// The ledger's records, each with when the append that committed it returned, if it was
/// answered (µs; `None` for an unknown outcome).
type Ledger = Vec<(Option<u64>, HistRecord)>;

/// The records every linearization of a tip read invoked at `invoke_us` has before it, less
/// one: the stale tip a corrupt read answers (`None` when there is no record to go back from).
fn stale_tip(ledger: &Ledger, invoke_us: u64) -> Option<u64> {
    let certain = ledger
        .iter()
        .rposition(|(answered, _)| answered.is_some_and(|at| at < invoke_us))
        .map_or(0, |i| i as u64 + 1);
    certain.checked_sub(1)
}

/// Replica `r`'s append of its record number `written` at `expected`, returning at
/// `complete_us`: an unknown outcome (1%, which took effect half the time when it could),
/// else committed at the tip or a conflict. Returns the call, its answer and the replica's
/// next call.
fn append(
    ledger: &mut Ledger,
    rng: &mut ChaCha8Rng,
    (r, written): (usize, u64),
    expected: u64,
    complete_us: u64,
) -> (Op, Outcome, OpResult, Next) {
    let tip = ledger.len() as u64;
    let record = HistRecord::Event {
        writer_id: HistWriterId {
            owner: process(r),
            journal: 1,
        },
        seq_in_writer: written,
        payload: vec![written as u8],
    };
    let op = Op::LedgerAppend {
        expected,
        record: record.clone(),
    };
    let commits = expected == tip;
    if chance(rng, 10) {
        if commits && chance(rng, 500) {
            ledger.push((None, record));
        }
        let reason = "deadline exceeded".into();
        (op, Outcome::Info, OpResult::Unknown { reason }, Next::Tip)
    } else if commits {
        ledger.push((Some(complete_us), record));
        let next = Next::Append { expected: tip + 1 };
        (op, Outcome::Ok, OpResult::Appended { seq: tip + 1 }, next)
    } else {
        let next = Next::Append { expected: tip };
        (op, Outcome::Fail, OpResult::Conflict { actual: tip }, next)
    }
}

/// A ledger history: each replica reads the tip, then appends at it (1–20 ms apart) until a
/// conflict, after which it appends at the tip the conflict reported, or, after an append with
/// an unknown outcome (1%, which took effect half the time), reads the tip again. The final
/// ledger is recorded (`ledger` lines), as the world records it, so unknown outcomes resolve.
pub fn ledger_history(shape: &Shape) -> History {
    let mut calls = Calls::start(shape, 20_000);
    let mut next = vec![Next::Tip; shape.replicas];
    let mut written = vec![0u64; shape.replicas];
    let mut ledger = Ledger::new();
    let mut ops = Vec::with_capacity(shape.ops);
    let mut planted = false;
    while ops.len() < shape.ops {
        let call = calls.next();
        let r = call.replica;
        let (op, outcome, result, then) = match next[r] {
            Next::Tip => {
                let pending = matches!(shape.corruption, Some(Corruption::StaleTip { after })
                    if !planted && ops.len() >= after);
                let stale = pending
                    .then(|| stale_tip(&ledger, call.invoke_us))
                    .flatten();
                planted |= stale.is_some();
                let seq = stale.unwrap_or(ledger.len() as u64);
                let then = Next::Append { expected: seq };
                (Op::LedgerTip {}, Outcome::Ok, OpResult::Tip { seq }, then)
            }
            Next::Append { expected } => {
                written[r] += 1;
                let writer = (r, written[r]);
                append(
                    &mut ledger,
                    &mut calls.rng,
                    writer,
                    expected,
                    call.complete_us,
                )
            }
        };
        next[r] = then;
        ops.push(op_line(&call, op, outcome, result));
        let think = between(&mut calls.rng, 1_000, 20_000);
        calls.schedule(r, call.complete_us, think);
    }
    let final_ledger = ledger
        .into_iter()
        .enumerate()
        .map(|(i, (_, record))| {
            Line::Ledger(LedgerLine {
                session: SESSION.into(),
                seq: i as u64 + 1,
                record,
            })
        })
        .collect();
    history("generated-ledger", Vec::new(), ops, final_ledger)
}
