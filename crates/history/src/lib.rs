//! leasesim's history: the format every run writes and every checker reads, and the
//! vocabularies the layers above share — the checks ([`catalogue`]), what a check concluded
//! ([`verdict`]), the exit codes ([`exit`]) and times for people ([`time`]). It imports no
//! other leasesim crate but `leasesim-files` (docs/architecture.md#layers).
//!
//! # The operation history format: what a run did, as JSON lines
//!
//! The simulated world (and later live mode) writes a history; the checkers read it and never
//! import the simulation (docs/history.md and docs/architecture.md#dependency-rules). This page is
//! the format's specification; the types below are its only implementation, and
//! `crates/history/src/tests.rs` pins one golden line of each kind so that any drift is loud.
//!
//! # Files
//!
//! - UTF-8 text, one JSON object per line, each line ended by `\n` (the newline after the
//!   last line may be missing). No other whitespace: the writer emits none, the reader
//!   tolerates JSON whitespace inside a line.
//! - **No empty lines**, not even at the end: an empty or blank line is an error naming its
//!   line. The writer never writes one, so an empty line means a damaged or concatenated
//!   file; and without them line *n* of the file is always [`History::lines`]`[n − 1]`.
//! - Every object starts with `"v":1` ([`SCHEMA_VERSION`]) and then `"kind"`, followed by
//!   that kind's fields in the fixed order given below. The reader refuses another `v`, an
//!   unknown `kind`, a missing field, an **unknown field** and a value of the wrong type or
//!   range: a writer that changes anything bumps `v`.
//! - Errors name the file and the 1-based line, e.g.
//!   ``history.jsonl:7: bad op line: missing field `session` ``. Bad input is never a panic.
//!
//! # Conventions
//!
//! - **Times** are integers in microseconds, the clock in the field name: `*_us` is true
//!   simulated time (the same for every host); `*_local_us` is the monotonic clock of the host
//!   the line is about (an operation's caller, a validity check's replica);
//!   `*_authority_us` is the lease authority's monotonic clock. Readings taken at
//!   nanosecond resolution are truncated to whole µs ([`micros`]). Durations (`ttl_us`,
//!   `grace_period_us`, …) are µs too. Every time and duration is below 2^62 µs
//!   ([`MAX_TIME_US`], about 146 000 years), and an operation's `complete_us` is at least its
//!   `invoke_us`: the reader refuses anything else.
//! - **Integers only**, no floats anywhere. Integers are unsigned 64-bit except `drift_ppm`
//!   (signed). Values above 2⁵³ (e.g. a seed) are exact here but not in tools that read JSON
//!   numbers as doubles.
//! - **Optional** values are written as `null`, never left out (a reader accepts a left-out
//!   optional field as `null`).
//! - **Tags**: the line's own tag is `kind`; a nested object that comes in several shapes
//!   (call, result, record, decision…) carries its tag in `type`. All tags and enum values are
//!   `snake_case`.
//! - A **process** (an operation's caller, a lease owner, a journal's owner) is
//!   `{"replica":"replica-1","incarnation":0}`: the replica's stable name, which is also its
//!   host's name, and its restart counter from 0 ([`Process`]).
//! - A **writer id** (one opened journal) is `{"owner":<process>,"journal":1}`
//!   ([`HistWriterId`]).
//! - A **record** ([`HistRecord`]) is
//!   `{"type":"fence","epoch":3,"owner":<process>,"writer_id":<writer id>}` or
//!   `{"type":"event","writer_id":<writer id>,"seq_in_writer":2,"payload_hex":"686900ff"}`:
//!   the payload bytes as lowercase hex, two digits per byte (`""` when empty); upper case
//!   and odd lengths are refused, so a record has exactly one spelling.
//! - Sessions are plain strings; a session is also its ledger's name.
//!
//! # Order of lines
//!
//! Lines are in the order the recorder wrote them, which is the recorder's business (a
//! recorder may write operations as they complete, or all of them by id at the end).
//! Checkers rely on only two orders: one host's `clock` segments are in time order, and one
//! session's `ledger` lines are in `seq` order. Anything else they sort by the times in the
//! lines.
//!
//! # Kinds of line
//!
//! ## `config` — the run's parameters ([`ConfigLine`]); exactly one per history
//!
//! ```json
//! {"v":1,"kind":"config","ttl_us":3000000,"skew_margin_us":300000,"renew_interval_us":1000000,"longest_reconnect_backoff_us":500000,"grace_period_us":3000000,"mutant":null,"seed":7,"replicas":3,"sessions":["s1","s2"],"authority":"lease"}
//! ```
//!
//! | field | |
//! |---|---|
//! | `ttl_us` | lease TTL the authority grants |
//! | `skew_margin_us` | the holder's margin for a grant of `ttl_us` (the same fraction of any other) |
//! | `renew_interval_us` | time between renewals |
//! | `longest_reconnect_backoff_us` | longest reconnect backoff of any client |
//! | `grace_period_us` | the authority's restart grace period |
//! | `mutant` | planted bug by its CLI name (`"token-not-advanced-on-expiry"`), or `null` |
//! | `seed` | the master seed |
//! | `replicas` | number of replica hosts, `replica-1` … `replica-N` |
//! | `sessions` | the contended sessions |
//! | `authority` | the host whose decisions the `decision` lines are, or `null` for a backend without an authority clock (judged on its holders); absent means `"lease"` |
//!
//! ## `op` — one client operation ([`OpLine`])
//!
//! ```json
//! {"v":1,"kind":"op","id":12,"process":{"replica":"replica-1","incarnation":0},"session":"s1","op":{"type":"journal_append","writer_id":{"owner":{"replica":"replica-1","incarnation":0},"journal":1},"seq_in_writer":2},"invoke_us":1500000,"complete_us":1503000,"invoke_local_us":1500150,"complete_local_us":1503150,"outcome":"ok","result":{"type":"appended","seq":4}}
//! ```
//!
//! | field | |
//! |---|---|
//! | `id` | unique in the history |
//! | `process` | the caller |
//! | `session` | the session (and ledger) concerned |
//! | `op` | the call and its arguments, see below |
//! | `invoke_us`, `complete_us` | true time of invocation and completion; `complete_us` is `null` while pending |
//! | `invoke_local_us`, `complete_local_us` | the same on the caller's monotonic clock; `complete_local_us` is `null` while pending or when the caller crashed first |
//! | `outcome` | `"ok"` took effect as the result says · `"fail"` certainly no effect · `"info"` may or may not have taken effect |
//! | `result` | what the caller saw, see below; `null` while pending |
//!
//! A pending operation has `complete_us`, `complete_local_us` and `result` all `null` and
//! outcome `info`. An operation cut off by a crash or by the end of the run is written as
//! completed at that time with outcome `info` and result `cut_off`.
//!
//! `op` ([`Op`]):
//!
//! | `type` | arguments |
//! |---|---|
//! | `lease_acquire` | `owner` |
//! | `lease_renew` | `owner`, `token` (of the lease value presented; a script may present an old one) |
//! | `lease_release` | `owner`, `token` |
//! | `ledger_tip` | — |
//! | `ledger_append` | `expected` (the tip the CAS expects; commits at `expected + 1`), `record` |
//! | `journal_open` | `epoch` (the lease token it fences with; the writer id comes in the result) |
//! | `journal_append` | `writer_id`, `seq_in_writer` (unique, so the event is found in the final ledger by them) |
//! | `kube_get` | — (KubeLease's read of the session's Lease object) |
//! | `kube_create` | `holder_identity`, `transitions` |
//! | `kube_update` | `expected_rv` (the `resourceVersion` precondition, `null`: none), `holder_identity`, `transitions` |
//! | `kube_delete` | `expected_rv` |
//! | `target_get` | — (a target adapter's own read of the session's Lease object: the token of a crate that exposes none; docs/targets.md#kube-lease-manager) |
//! | `target_signal` | — (a target crate's "I lead" signal changed; invoked and completed at once) |
//!
//! `result` ([`OpResult`]), with the outcome that usually goes with it:
//!
//! | `type` | fields | outcome | from |
//! |---|---|---|---|
//! | `granted` | `token`, `expiry_authority_us`, `ttl_us` | ok | acquire, renew |
//! | `released` | — | ok | release (also one that changed nothing) |
//! | `held` | `holder_token` (or `null`: nobody holds it) | fail | acquire, renew |
//! | `unsupported` | — | fail | lease |
//! | `unavailable` | `reason` | info for lease calls (outcome unknown), fail for ledger and journal calls (no effect) | any |
//! | `invalid` | `reason` | fail | any |
//! | `tip` | `seq` | ok | ledger tip |
//! | `appended` | `seq` (where the record committed) | ok | ledger append, journal append |
//! | `conflict` | `actual` (the ledger's tip) | fail | ledger append |
//! | `unknown` | `reason` | info | ledger calls |
//! | `opened` | `writer_id`, `fence_seq` (where its fence committed) | ok | journal open |
//! | `stale_epoch` | `epoch`, `highest_fence` | fail | journal open |
//! | `fence_contention` | `attempts` | fail | journal open |
//! | `fenced` | `expected`, `actual` | fail | journal append (poisons the journal) |
//! | `ambiguous` | `expected`, `reason` | info | journal open, append (poisons the journal) |
//! | `lease_lost` | `cause`: `{"type":"released"}`, `{"type":"overtaken","holder_token":4}` or `{"type":"deadline","valid_until_local_us":3700000}` | fail | journal open, append |
//! | `poisoned` | `first` (the earlier failure, as text) | fail | journal append |
//! | `cut_off` | `reason` (`"crash"`, `"run ended"`) | info | any |
//! | `kube_object` | `resource_version`, `holder_identity`, `transitions` | ok | kube calls |
//! | `kube_not_found` | — | ok for a get, fail otherwise | kube calls |
//! | `kube_conflict` | — (409) | fail | kube create, update, delete |
//! | `kube_status` | `code`, `reason` | info for a 5xx, fail for a 4xx | kube calls |
//! | `signal` | `leads` (the value the crate's signal changed to) | ok | target signal |
//!
//! More examples:
//!
//! ```json
//! {"v":1,"kind":"op","id":3,"process":{"replica":"replica-2","incarnation":1},"session":"s1","op":{"type":"lease_acquire","owner":{"replica":"replica-2","incarnation":1}},"invoke_us":4000000,"complete_us":4000040,"invoke_local_us":3999000,"complete_local_us":3999040,"outcome":"ok","result":{"type":"granted","token":3,"expiry_authority_us":7000000,"ttl_us":3000000}}
//! {"v":1,"kind":"op","id":4,"process":{"replica":"replica-1","incarnation":0},"session":"s1","op":{"type":"ledger_append","expected":4,"record":{"type":"fence","epoch":2,"owner":{"replica":"replica-1","incarnation":0},"writer_id":{"owner":{"replica":"replica-1","incarnation":0},"journal":1}}},"invoke_us":5000000,"complete_us":null,"invoke_local_us":5000150,"complete_local_us":null,"outcome":"info","result":null}
//! ```
//!
//! ## `decision` — one decision of the lease authority ([`DecisionLine`])
//!
//! ```json
//! {"v":1,"kind":"decision","session":"s1","owner":{"replica":"replica-2","incarnation":1},"decision":{"type":"grant","token":3,"expiry_authority_us":7000000,"ttl_us":3000000},"at_authority_us":4000000,"at_us":4000020}
//! ```
//!
//! `session`; `owner` (the requester); `decision` (below); `at_authority_us` (the
//! authority's monotonic clock when it decided); `at_us` (true time). TOKEN, EXCL and
//! EXPIRY judge these. `decision` ([`Decision`]):
//!
//! | `type` | fields |
//! |---|---|
//! | `grant` | an acquire granted (takeover or live same-owner re-acquire): `token`, `expiry_authority_us`, `ttl_us` |
//! | `renew` | a renew granted: `token`, `expiry_authority_us` (the new expiry), `ttl_us` |
//! | `release` | a release answered: `token` (presented), `ended` (`true`: it ended the caller's own current hold; `false`: stale or unknown, nothing changed) |
//! | `refuse` | `request` (`"acquire"`, `"renew"`, `"release"`), `token` (presented; `null` for acquire), `reason`: `{"type":"held","holder_token":4}` (`null` when nobody holds it), `{"type":"grace_period","remaining_authority_us":1000000}` or `{"type":"unavailable","reason":"…"}` |
//!
//! ## `validity` — a replica judged its lease valid and goes on to use it ([`ValidityLine`])
//!
//! ```json
//! {"v":1,"kind":"validity","process":{"replica":"replica-1","incarnation":0},"session":"s1","purpose":"append","epoch":2,"at_local_us":1500150,"at_us":1500000,"valid_until_local_us":3700000}
//! ```
//!
//! Every decision to use the lease writes one. `process`; `session`; `purpose` (what it
//! goes on to send: `"append"`, `"journal_open"` — a journal's fence, one line per try —
//! or `"cleanup_append"` — a graceful shutdown's final append; `"append"` when absent);
//! `epoch` (the lease token it writes under); `at_local_us` (its
//! clock when it judged); `at_us` (true time); `valid_until_local_us` (the deadline as the
//! replica computed it — STOP recomputes it from the `op` lines and never trusts this).
//!
//! ## `phase` — a marker in the run ([`PhaseLine`])
//!
//! ```json
//! {"v":1,"kind":"phase","name":"faults_healed","at_us":30000000}
//! ```
//!
//! `name`: `"faults_healed"` (the fault schedule has ended and everything is healed; LIVE
//! starts here) or `"run_ended"` (the run stopped; LIVE's window ends here); `at_us`.
//!
//! ## `clock` — one segment of a host's monotonic clock ([`ClockLine`])
//!
//! ```json
//! {"v":1,"kind":"clock","host":"lease","boot":0,"from_us":0,"local_from_us":0,"drift_ppm":-200,"suspended":false}
//! ```
//!
//! `host` (`lease`, `ledger`, `replica-1`, …); `boot` (from 0, bumped at each restart; on
//! a replica host it equals the incarnation running there); `from_us` (true time the
//! segment starts); `local_from_us` (the host's reading then); `drift_ppm` (rate error,
//! more than −1 000 000: `+100` runs 100 µs per second fast); `suspended` (the clock stands
//! still for the whole segment: the host is suspended or down).
//!
//! A segment lasts until the host's next one; within it the reading at true time `t` is
//! `local_from_us + ⌊(t − from_us) × (1 000 000 + drift_ppm) / 1 000 000⌋`, or
//! `local_from_us` when suspended. A change of drift, a suspend, a resume or a restart starts
//! a new segment; a restart is a segment with a higher `boot`, where the clock starts again
//! from its `local_from_us`. One host's segments have strictly increasing `from_us` and
//! non-decreasing `boot`. [`ClockMap`] maps true time to a host's reading
//! ([`ClockMap::local_at`]) and back ([`ClockMap::true_at`], the earliest true time the
//! clock reads at least a value, or [`ClockMap::true_at_in_boot`]).
//!
//! ## `ledger` — one record of the final ledger ([`LedgerLine`])
//!
//! ```json
//! {"v":1,"kind":"ledger","session":"s1","seq":4,"record":{"type":"event","writer_id":{"owner":{"replica":"replica-1","incarnation":0},"journal":1},"seq_in_writer":2,"payload_hex":"686900ff"}}
//! ```
//!
//! `session`; `seq` (position from 1); `record`. Every record of every session, a session's
//! records in `seq` order.
//!
//! ## `event` — something a host reported happening ([`EventLine`])
//!
//! ```json
//! {"v":1,"kind":"event","at_us":12500000,"host":"replica-2","event":"run_cancelled_on_loss"}
//! ```
//!
//! | field | |
//! |---|---|
//! | `at_us` | true time it happened |
//! | `host` | where: a replica (`run_cancelled_on_loss`, `sticky_disable`), the authority `lease` (`record_deleted`), or the host whose wall clock the nemesis stepped back (`backward_wall_jump`) |
//! | `event` | [`HistEvent`]: `run_cancelled_on_loss`, `sticky_disable`, `record_deleted` or `backward_wall_jump` |
//!
//! Facts no other line shows, for coverage ("sometimes" events); the checkers ignore them.
//!
//! ## `write` — one write a Kubernetes API server accepted ([`WriteLine`])
//!
//! ```json
//! {"v":1,"kind":"write","host":"apiserver","session":"s1","object":"s1-0f3a9c2e","verb":"update","holder_identity":"replica-2#0","transitions":2,"resource_version":17,"at_us":12000000}
//! ```
//!
//! `host`; `session`; `object` (`metadata.name`); `verb` ([`WriteVerb`]: `create`, `update`,
//! `delete`); `holder_identity` (`""`: none) and `transitions` (`leaseTransitions`) after the
//! write; `resource_version` it produced; `at_us` (true time). In acceptance order. A backend
//! with no authority clock (KubeLease) has no `decision` lines: its accepted writes are what
//! TOKEN and EXPIRY judge, and its `kube_*` operations what LIN-LEASE judges.
//!
//! ## `nemesis` — one action of the nemesis ([`NemesisLine`])
//!
//! ```json
//! {"v":1,"kind":"nemesis","at_us":5000123,"host":"replica-1","action":"sigstop","peer":null,"detail":"pause for 5000 ms"}
//! ```
//!
//! `at_us` (true time: the orchestrator's clock); `host` acted on (`all` for a heal); `action`
//! ([`NemesisAction`]); `peer`, the other end of a link action, else `null`; `detail`, free
//! text or `null`. Live mode writes `sigstop`, `sigcont`, `sigkill`, `start`, `partition`,
//! `partition_one_way`, `hold`, `release`, `latency`, `link_flaps`, `reset`, `heal`, `clock`
//! and `dropped` (a drawn fault with no real counterpart, not applied). The simulated world
//! writes them too, one per fault with the schedule's names (`pause`, `suspend`, `stall`,
//! `worker_panic`, `crash`, `restart`, `partition`, `partition_one_way`, `isolate`, `hold`,
//! `release`, `latency`, `link_flaps`, `delay_replies`, `deliver`, `hold_replies`,
//! `release_replies`, `clock_drift`, `wall_jump`, `wall_offset`, `delete_lease_record`,
//! `authority_errors`, `serve`, `heal`, `fork`), a `resume` where a freeze ends
//! (`crates/sim/src/fault_lines.rs`), and before a fault aimed at a session's holder an
//! `aim_at_holder` line on the replica it strikes (`detail`: `holder of s1`, or `nobody holds
//! s1: the schedule's replica`). The reader refuses any other action, naming these; it reads
//! `apiserver_errors`, older histories' name for `authority_errors`, as that. The checkers
//! ignore these lines except SIGNAL, which reads held links, clock faults and crashes from
//! them (docs/checks.md#signal); the timeline draws them.
//!
//! ## `work` — a replica took a unit of work for a session, or ended one ([`WorkLine`])
//!
//! ```json
//! {"v":1,"kind":"work","process":{"replica":"replica-1","incarnation":0},"session":"s1","state":"taken","at_us":3000000}
//! ```
//!
//! `process`; `session`; `state` ([`WorkState`]: `taken`, then `ran` or `dropped`); `at_us`
//! (true time). The generated workload writes one `taken` as a run starts and one end line as
//! it ends, in the world and in live mode; between them the replica has pending work for the
//! session, which LIVE requires it to hold and run, or drop, or end its incarnation
//! (docs/checks.md#live). Scripted calls write none.
//!
//! # Reading and writing
//!
//! [`HistoryWriter`] writes lines as they happen; [`History::write_jsonl`] writes a whole
//! history. [`History::read_jsonl`] / [`History::read_jsonl_path`] read one and
//! [`History::validate`] it: at most one `config` line, unique op ids, pending operations
//! as described above, each host's clock segments a valid [`ClockMap`]. The accessors
//! ([`History::config`], [`History::ops`], [`History::decisions`],
//! [`History::validity_checks`], [`History::phase_at_us`], [`History::final_ledger`],
//! [`History::clock_maps`], [`History::events`], [`History::writes`]) give the checkers typed views.

mod action;
pub mod catalogue;
mod clock_map;
pub mod exit;
pub mod input;
pub mod limits;
pub mod time;
pub mod verdict;

mod error;
pub mod hosts;
mod io;
mod line;
mod op;
mod record;
#[cfg(test)]
mod tests;

use std::collections::BTreeMap;

pub use action::NemesisAction;
pub use clock_map::{ClockMap, ClockMapError};
pub use error::{HistoryError, LineProblem};
pub use io::HistoryWriter;
pub use io::read_lines;
pub use line::{
    ClockLine, ConfigLine, Decision, DecisionLine, EventLine, HistEvent, HistLeaseUse, LedgerLine,
    Line, NemesisLine, Phase, PhaseLine, Refusal, Request, ValidityLine, WorkLine, WorkState,
    WriteLine, WriteVerb,
};
pub use op::{HistLossCause, Op, OpLine, OpResult, Outcome, micros};
pub use record::{HistRecord, HistWriterId, Process};

/// The schema version every line carries as `v`. Bump it on any change to the format.
pub const SCHEMA_VERSION: u32 = 1;

/// Every time and duration (`*_us`) in a history is below this: 2^62 µs, about 146 000
/// years. [`History::validate`] refuses a larger one, so checkers can add to times without
/// overflow (bad-input probe, D2).
pub const MAX_TIME_US: u64 = 1 << 62;

/// A whole history: its lines in order, and a name (the file it came from) for errors.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct History {
    name: String,
    lines: Vec<Line>,
}

/// `History`'s accessors of one kind of line each: `name => Variant(LineType);` makes
/// `History::name`, the lines that are `Line::Variant`, in order.
macro_rules! line_accessors {
    ($($(#[$doc:meta])* $name:ident => $variant:ident($line:ty);)*) => {
        impl History {
            $(
                $(#[$doc])*
                pub fn $name(&self) -> impl Iterator<Item = &$line> {
                    self.lines.iter().filter_map(|line| match line {
                        Line::$variant(line) => Some(line),
                        _ => None,
                    })
                }
            )*
        }
    };
}

line_accessors! {
    /// The operation lines, in order.
    ops => Op(OpLine);
    /// The authority's decision lines, in order.
    decisions => Decision(DecisionLine);
    /// The replicas' validity-check lines, in order.
    validity_checks => Validity(ValidityLine);
    /// The phase markers, in order.
    phases => Phase(PhaseLine);
    /// The event lines, in order (coverage counts them; checkers ignore them).
    events => Event(EventLine);
    /// The writes a Kubernetes API server accepted, in order (empty for other backends).
    writes => Write(WriteLine);
    /// The clock segment lines, in order.
    clock_segments => Clock(ClockLine);
    /// The nemesis's actions, in order (the checkers of host faults and the timeline read
    /// them).
    nemesis_actions => Nemesis(NemesisLine);
    /// The replicas' work lines, in order (LIVE reads the work still pending).
    work => Work(WorkLine);
}

impl History {
    /// An empty history called `name` in errors.
    pub fn new(name: impl Into<String>) -> Self {
        History::from_lines(name, Vec::new())
    }

    /// A history of `lines` called `name` in errors. Not validated: see
    /// [`History::validate`].
    pub fn from_lines(name: impl Into<String>, lines: Vec<Line>) -> Self {
        History {
            name: name.into(),
            lines,
        }
    }

    /// The name errors give (the file's path when read from a file).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Every line, in order; line `i` here is line `i + 1` of the file.
    pub fn lines(&self) -> &[Line] {
        &self.lines
    }

    /// Appends `line`.
    pub fn push(&mut self, line: impl Into<Line>) {
        self.lines.push(line.into());
    }

    /// The lines, by value.
    pub fn into_lines(self) -> Vec<Line> {
        self.lines
    }

    /// Checks what serde cannot (reading does this): every `*_us` value below
    /// [`MAX_TIME_US`]; an op's `complete_us` at least its `invoke_us`; at most one `config`
    /// line; op ids unique; a pending op (`complete_us` null) has outcome `info`, no
    /// `complete_local_us` and no `result`; each host's clock segments form a [`ClockMap`].
    /// A missing config line is not an error here (see [`History::config`]).
    ///
    /// # Errors
    /// The first offending line, by its 1-based number.
    pub fn validate(&self) -> Result<(), HistoryError> {
        let mut config_line = None;
        let mut op_lines = BTreeMap::new();
        let mut first_bad = None;
        for (number, line) in (1u64..).zip(&self.lines) {
            let problem = time_problem(line).or_else(|| match line {
                Line::Config(_) => config_line
                    .replace(number)
                    .map(|first_line| LineProblem::DuplicateConfig { first_line }),
                Line::Op(op) => match op_lines.insert(op.id, number) {
                    Some(first_line) => Some(LineProblem::DuplicateOpId {
                        id: op.id,
                        first_line,
                    }),
                    None => pending_problem(op).or_else(|| order_problem(op)),
                },
                _ => None,
            });
            if let Some(problem) = problem {
                first_bad = Some(self.line_error(number, problem));
                break;
            }
        }
        // A bad clock segment may come before the first bad line found above.
        match (first_bad, self.clock_maps()) {
            (Some(line), Err(clock)) if clock.line() < line.line() => Err(clock),
            (Some(line), _) => Err(line),
            (None, clock) => clock.map(drop),
        }
    }

    /// The host whose decisions the `decision` lines are ([`ConfigLine::authority`]); `None`
    /// for a backend without an authority clock. Without a valid `config` line, `lease`, as
    /// for histories written before the field existed.
    pub fn authority_host(&self) -> Option<&str> {
        match self.config() {
            Ok(config) => config.authority.as_deref(),
            Err(_) => Some(hosts::LEASE),
        }
    }

    /// The one `config` line.
    ///
    /// # Errors
    /// [`HistoryError::MissingConfig`] when there is none, [`LineProblem::DuplicateConfig`]
    /// at the second one when there are more.
    pub fn config(&self) -> Result<&ConfigLine, HistoryError> {
        let mut configs = (1u64..)
            .zip(&self.lines)
            .filter_map(|(number, line)| match line {
                Line::Config(config) => Some((number, config)),
                _ => None,
            });
        let Some((first_line, config)) = configs.next() else {
            return Err(HistoryError::MissingConfig {
                file: self.name.clone(),
            });
        };
        match configs.next() {
            Some((number, _)) => {
                Err(self.line_error(number, LineProblem::DuplicateConfig { first_line }))
            }
            None => Ok(config),
        }
    }

    /// True time of the first `phase` marker, µs; `None` when there is none (e.g. no
    /// `faults_healed`: the faults never healed).
    pub fn phase_at_us(&self, phase: Phase) -> Option<u64> {
        self.phases()
            .find(|marker| marker.name == phase)
            .map(|marker| marker.at_us)
    }

    /// Each host's clock map, by host name.
    ///
    /// # Errors
    /// Segments that do not form a [`ClockMap`]: the earliest offending line over all hosts.
    pub fn clock_maps(&self) -> Result<BTreeMap<String, ClockMap>, HistoryError> {
        let mut segments: BTreeMap<String, Vec<(u64, ClockLine)>> = BTreeMap::new();
        for (number, line) in (1u64..).zip(&self.lines) {
            if let Line::Clock(segment) = line {
                segments
                    .entry(segment.host.clone())
                    .or_default()
                    .push((number, segment.clone()));
            }
        }
        let mut maps = BTreeMap::new();
        let mut first_bad: Option<(u64, ClockMapError)> = None;
        for (host, numbered) in segments {
            let (numbers, lines): (Vec<u64>, Vec<ClockLine>) = numbered.into_iter().unzip();
            match ClockMap::new(lines) {
                Ok(map) => {
                    maps.insert(host, map);
                }
                Err(error) => {
                    let number = numbers[error.index().unwrap_or(0)];
                    if first_bad.as_ref().is_none_or(|(first, _)| number < *first) {
                        first_bad = Some((number, error));
                    }
                }
            }
        }
        match first_bad {
            Some((number, error)) => Err(self.line_error(number, LineProblem::Clock(error))),
            None => Ok(maps),
        }
    }

    /// The final ledger: each session's `(seq, record)` pairs in line order (the writer puts
    /// them in `seq` order; checkers judge gaps and duplicates themselves).
    pub fn final_ledger(&self) -> BTreeMap<String, Vec<(u64, HistRecord)>> {
        let mut ledger: BTreeMap<String, Vec<(u64, HistRecord)>> = BTreeMap::new();
        for line in &self.lines {
            if let Line::Ledger(entry) = line {
                ledger
                    .entry(entry.session.clone())
                    .or_default()
                    .push((entry.seq, entry.record.clone()));
            }
        }
        ledger
    }

    fn line_error(&self, line: u64, problem: LineProblem) -> HistoryError {
        HistoryError::Line {
            file: self.name.clone(),
            line,
            problem,
        }
    }
}

/// The first `*_us` value of `line` (nested ones included, e.g. a result's
/// `expiry_authority_us`) at or beyond [`MAX_TIME_US`].
fn time_problem(line: &Line) -> Option<LineProblem> {
    times(line)
        .into_iter()
        .find(|&(_, us)| us >= MAX_TIME_US)
        .map(|(field, value)| LineProblem::TimeOutOfRange {
            field: field.to_string(),
            value,
        })
}

/// Every time and duration of `line` (its `*_us` fields, nested ones included), by name.
fn times(line: &Line) -> Vec<(&'static str, u64)> {
    match line {
        Line::Config(c) => vec![
            ("ttl_us", c.ttl_us),
            ("skew_margin_us", c.skew_margin_us),
            ("renew_interval_us", c.renew_interval_us),
            (
                "longest_reconnect_backoff_us",
                c.longest_reconnect_backoff_us,
            ),
            ("grace_period_us", c.grace_period_us),
        ],
        Line::Op(op) => op_times(op),
        Line::Decision(d) => {
            let mut times = vec![("at_authority_us", d.at_authority_us), ("at_us", d.at_us)];
            match &d.decision {
                Decision::Grant {
                    expiry_authority_us,
                    ttl_us,
                    ..
                }
                | Decision::Renew {
                    expiry_authority_us,
                    ttl_us,
                    ..
                } => times.extend([
                    ("expiry_authority_us", *expiry_authority_us),
                    ("ttl_us", *ttl_us),
                ]),
                Decision::Refuse {
                    reason:
                        Refusal::GracePeriod {
                            remaining_authority_us,
                        },
                    ..
                } => times.push(("remaining_authority_us", *remaining_authority_us)),
                _ => {}
            }
            times
        }
        Line::Validity(v) => vec![
            ("at_local_us", v.at_local_us),
            ("at_us", v.at_us),
            ("valid_until_local_us", v.valid_until_local_us),
        ],
        Line::Phase(p) => vec![("at_us", p.at_us)],
        Line::Clock(c) => vec![("from_us", c.from_us), ("local_from_us", c.local_from_us)],
        Line::Event(e) => vec![("at_us", e.at_us)],
        Line::Write(w) => vec![("at_us", w.at_us)],
        Line::Nemesis(n) => vec![("at_us", n.at_us)],
        Line::Work(w) => vec![("at_us", w.at_us)],
        Line::Ledger(_) => Vec::new(),
    }
}

fn op_times(op: &OpLine) -> Vec<(&'static str, u64)> {
    let mut times = vec![("invoke_us", op.invoke_us)];
    times.extend(op.complete_us.map(|us| ("complete_us", us)));
    times.push(("invoke_local_us", op.invoke_local_us));
    times.extend(op.complete_local_us.map(|us| ("complete_local_us", us)));
    match &op.result {
        Some(OpResult::Granted {
            expiry_authority_us,
            ttl_us,
            ..
        }) => times.extend([
            ("expiry_authority_us", *expiry_authority_us),
            ("ttl_us", *ttl_us),
        ]),
        Some(OpResult::LeaseLost {
            cause: HistLossCause::Deadline {
                valid_until_local_us,
            },
        }) => times.push(("valid_until_local_us", *valid_until_local_us)),
        _ => {}
    }
    times
}

/// An op that completes before it was invoked (the search would meet its return first).
fn order_problem(op: &OpLine) -> Option<LineProblem> {
    let complete_us = op.complete_us?;
    (complete_us < op.invoke_us).then_some(LineProblem::CompletesBeforeInvoke {
        id: op.id,
        invoke_us: op.invoke_us,
        complete_us,
    })
}

/// What a pending op says that a pending op cannot.
fn pending_problem(op: &OpLine) -> Option<LineProblem> {
    if !op.is_pending() {
        return None;
    }
    let detail = if op.outcome != Outcome::Info {
        "its outcome is not info"
    } else if op.complete_local_us.is_some() {
        "it has a complete_local_us"
    } else if op.result.is_some() {
        "it has a result"
    } else {
        return None;
    };
    Some(LineProblem::PendingOp {
        id: op.id,
        detail: detail.to_string(),
    })
}
