//! What can be wrong with a history: [`HistoryError`] names the file and the 1-based line;
//! [`LineProblem`] says what is wrong with that line.

use super::SCHEMA_VERSION;
use super::clock_map::ClockMapError;
use std::fmt;

/// A history that cannot be read or used. Every variant names the history (its file name, or
/// the name given to an in-memory history) and, where one line is to blame, its 1-based line
/// number — for an in-memory history, the line it would have in the written file.
#[derive(Debug)]
#[non_exhaustive]
pub enum HistoryError {
    /// The file could not be opened or read.
    Io {
        /// The history's name.
        file: String,
        /// The line being read when it failed (1 when opening failed).
        line: u64,
        /// The I/O error.
        source: std::io::Error,
    },
    /// One line is not a valid history line, or contradicts an earlier one.
    Line {
        /// The history's name.
        file: String,
        /// 1-based line number.
        line: u64,
        /// What is wrong with it.
        problem: LineProblem,
    },
    /// The file is not one the reader may read (a FIFO, a device, a directory, or over the
    /// size cap): [`crate::input::InputError`], which names it.
    Input(crate::input::InputError),
    /// The history has no `config` line.
    MissingConfig {
        /// The history's name.
        file: String,
    },
}

impl fmt::Display for HistoryError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            HistoryError::Io { file, line, source } => {
                write!(f, "{file}:{line}: cannot read: {source}")
            }
            HistoryError::Line {
                file,
                line,
                problem,
            } => write!(f, "{file}:{line}: {problem}"),
            HistoryError::Input(f0) => write!(f, "{f0}"),
            HistoryError::MissingConfig { file } => {
                write!(f, "{file}: no config line; a history has exactly one")
            }
        }
    }
}

impl std::error::Error for HistoryError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            HistoryError::Io { source, .. } => Some(source),
            _ => None,
        }
    }
}

impl HistoryError {
    /// The line to blame, if one is.
    pub fn line(&self) -> Option<u64> {
        match self {
            HistoryError::Io { line, .. } | HistoryError::Line { line, .. } => Some(*line),
            HistoryError::MissingConfig { .. } | HistoryError::Input(_) => None,
        }
    }

    /// The problem with the line to blame, if it is a [`HistoryError::Line`].
    pub fn problem(&self) -> Option<&LineProblem> {
        match self {
            HistoryError::Line { problem, .. } => Some(problem),
            _ => None,
        }
    }
}

/// What is wrong with one line.
#[derive(Clone, PartialEq, Eq, Debug)]
#[non_exhaustive]
pub enum LineProblem {
    /// The line is empty or only whitespace; histories have no empty lines.
    Empty,
    /// The line is not valid UTF-8.
    NotUtf8,
    /// The line is not JSON.
    NotJson {
        /// The parser's complaint and column.
        detail: String,
    },
    /// The line is JSON but not an object.
    NotObject,
    /// The object has no `v`.
    MissingVersion,
    /// The object's `v` is not [`SCHEMA_VERSION`].
    WrongVersion {
        /// The `v` found, as JSON.
        found: String,
    },
    /// The object has no string `kind`.
    MissingKind,
    /// The `kind` is not one this version defines.
    UnknownKind {
        /// The kind found.
        kind: String,
    },
    /// A field is missing, unknown, or of the wrong type or value.
    Invalid {
        /// The line's kind.
        kind: String,
        /// What serde found wrong (e.g. "missing field `ttl_us`").
        detail: String,
    },
    /// A second `config` line.
    DuplicateConfig {
        /// Where the first one is.
        first_line: u64,
    },
    /// An operation id used before.
    DuplicateOpId {
        /// The id.
        id: u64,
        /// Where it was first used.
        first_line: u64,
    },
    /// A pending operation (`complete_us` null) that says more than a pending one can.
    PendingOp {
        /// The operation's id.
        id: u64,
        /// What contradicts it.
        detail: String,
    },
    /// A clock segment that does not continue its host's clock map.
    Clock(ClockMapError),
    /// A time (a `*_us` field, wherever it is nested) at or beyond [`super::MAX_TIME_US`].
    TimeOutOfRange {
        /// The field's name.
        field: String,
        /// Its value.
        value: u64,
    },
    /// An operation that completes before it was invoked.
    CompletesBeforeInvoke {
        /// The operation's id.
        id: u64,
        /// Its `invoke_us`.
        invoke_us: u64,
        /// Its `complete_us`.
        complete_us: u64,
    },
}

impl fmt::Display for LineProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LineProblem::Empty => write!(
                f,
                "empty line; a history has none (every line is one JSON object)"
            ),
            LineProblem::NotUtf8 => write!(f, "not UTF-8"),
            LineProblem::NotJson { detail } => write!(f, "not JSON: {detail}"),
            LineProblem::NotObject => write!(f, "not a JSON object"),
            LineProblem::MissingVersion => write!(
                f,
                "no schema version `v`; this reader reads v = {SCHEMA_VERSION}"
            ),
            LineProblem::WrongVersion { found } => write!(
                f,
                "schema version v = {found}; this reader reads v = {SCHEMA_VERSION}"
            ),
            LineProblem::MissingKind => write!(
                f,
                "no `kind`; expected one of {}",
                super::Line::KINDS.join(", ")
            ),
            LineProblem::UnknownKind { kind } => write!(
                f,
                "unknown kind {kind:?}; expected one of {}",
                super::Line::KINDS.join(", ")
            ),
            LineProblem::Invalid { kind, detail } => write!(f, "bad {kind} line: {detail}"),
            LineProblem::DuplicateConfig { first_line } => write!(
                f,
                "a second config line (the first is line {first_line}); a history has exactly one"
            ),
            LineProblem::DuplicateOpId { id, first_line } => write!(
                f,
                "op id {id} is already used on line {first_line}; op ids are unique"
            ),
            LineProblem::PendingOp { id, detail } => {
                write!(f, "op {id} is pending (complete_us is null) but {detail}")
            }
            LineProblem::Clock(f0) => write!(f, "{f0}"),
            LineProblem::TimeOutOfRange { field, value } => write!(
                f,
                "`{field}` = {value} µs is beyond the largest time a history may hold ({} µs = 2^62, \
         about 146 000 years); a time this large is a damaged or hand-made value",
                super::MAX_TIME_US
            ),
            LineProblem::CompletesBeforeInvoke {
                id,
                invoke_us,
                complete_us,
            } => write!(
                f,
                "op {id} completes at {complete_us} µs, before it was invoked at {invoke_us} µs; \
         complete_us must be at least invoke_us"
            ),
        }
    }
}

impl std::error::Error for LineProblem {}
