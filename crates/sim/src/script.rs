//! Scripted workloads: an explicit list of (time, replica, call), so that field cases replay
//! exactly — including raw lease calls made with an old lease value (docs/world.md#workload).
//!
//! JSON shape (schema version 1):
//! ```json
//! {"v": 1, "calls": [
//!   {"at_ms": 0, "replica": "replica-1", "call": "acquire", "session": "s1"},
//!   {"at_ms": 0, "replica": "replica-1", "call": "open_journal", "session": "s1"},
//!   {"at_ms": 0, "replica": "replica-1", "call": "append", "session": "s1", "payload": "a1"},
//!   {"at_ms": 13000, "replica": "replica-1", "call": "release", "lease": "s1"},
//!   {"at_ms": 14000, "replica": "replica-1", "call": "shutdown"}
//! ]}
//! ```
//! A replica runs its calls in order, each no earlier than its time; a call waits for the one
//! before it to finish. Leases are kept under a name (the session unless `name` is given), as
//! the value the grant returned, so a later `renew` or `release` can use an old value.

use serde::{Deserialize, Serialize};

use crate::versioned;

/// Schema version of script files.
pub const SCRIPT_SCHEMA_VERSION: u32 = 1;

/// A scripted workload.
#[derive(Clone, PartialEq, Eq, Debug, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Script {
    /// Schema version ([`SCRIPT_SCHEMA_VERSION`]).
    pub v: u32,
    /// The calls, in file order.
    pub calls: Vec<ScriptedCall>,
}

/// One call by one replica.
#[derive(Clone, PartialEq, Eq, Debug, Serialize, Deserialize)]
pub struct ScriptedCall {
    /// Earliest true simulated time to make the call, in ms from the start.
    pub at_ms: u64,
    /// The replica making it (`replica-1` …).
    pub replica: String,
    /// The call.
    #[serde(flatten)]
    pub call: Call,
}

/// What a scripted replica can do.
#[derive(Clone, PartialEq, Eq, Debug, Serialize, Deserialize)]
#[serde(tag = "call", rename_all = "snake_case", deny_unknown_fields)]
#[non_exhaustive]
pub enum Call {
    /// Acquire `session`, keeping the hold under `name` (default: the session).
    Acquire {
        /// The session.
        session: String,
        /// Name to keep the lease under.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        name: Option<String>,
    },
    /// Open the journal of `session` under the hold kept as `lease` (default: the session).
    OpenJournal {
        /// The session.
        session: String,
        /// The hold to open it under.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        lease: Option<String>,
    },
    /// Append an event to the open journal of `session`.
    Append {
        /// The session.
        session: String,
        /// The event's payload (UTF-8).
        payload: String,
    },
    /// Start the background renewer of the hold kept as `lease` (every ttl/3).
    StartRenewer {
        /// The hold.
        lease: String,
    },
    /// A raw renew with the lease value kept as `lease`, however old (a renewer that missed
    /// the loss).
    Renew {
        /// The kept lease value.
        lease: String,
    },
    /// A raw release with the lease value kept as `lease`, however old.
    Release {
        /// The kept lease value.
        lease: String,
    },
    /// `fork(2)` of the replica's process, on a backend whose replicas are processes of one
    /// host (`flock`, docs/world.md#flock-in-the-world): the child shares the parent's open
    /// file descriptions. `exit`: the child releases every lease value it inherited (the last
    /// one the parent got per session), closes what it inherited and exits; `linger`: the
    /// child keeps its copies open until the run ends, also after its parent dies.
    Fork {
        /// How the child ends.
        mode: ForkMode,
    },
    /// A graceful shutdown, as the service makes one: a final clean-up append (payload
    /// `clean-up`) to each open journal, in session order, each judged valid like any append;
    /// then every kept hold is released (invalidated first, so its renewer ends), and the
    /// replica stops: it may make no later call.
    Shutdown,
}

/// How a forked child ends ([`Call::Fork`], the nemesis's `fork` fault).
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Debug, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ForkMode {
    /// The child releases the inherited lease values, closes its copies and exits at once.
    Exit,
    /// The child keeps its copies open until the run ends.
    Linger,
}

impl ForkMode {
    /// `exit` or `linger`.
    pub fn name(self) -> &'static str {
        match self {
            ForkMode::Exit => "exit",
            ForkMode::Linger => "linger",
        }
    }
}

impl Script {
    /// An empty script.
    pub fn new() -> Self {
        Script {
            v: SCRIPT_SCHEMA_VERSION,
            calls: Vec::new(),
        }
    }

    /// Adds `call` by `replica` at `at_ms`.
    pub fn at(mut self, at_ms: u64, replica: &str, call: Call) -> Self {
        self.calls.push(ScriptedCall {
            at_ms,
            replica: replica.to_owned(),
            call,
        });
        self
    }

    /// Parses a script file's text.
    ///
    /// # Errors
    /// A message naming the line and column of malformed JSON, an unknown call or field, or
    /// a wrong schema version.
    pub fn from_json(text: &str) -> Result<Self, String> {
        versioned::from_json(text, "script", SCRIPT_SCHEMA_VERSION, |s: &Self| s.v)
    }

    /// The script as pretty JSON.
    pub fn to_json(&self) -> String {
        versioned::to_json(self, "script")
    }

    /// The calls of `replica`, in order.
    pub fn calls_of(&self, replica: &str) -> Vec<ScriptedCall> {
        self.calls
            .iter()
            .filter(|c| c.replica == replica)
            .cloned()
            .collect()
    }

    /// The replicas the script names, sorted.
    pub fn replicas(&self) -> Vec<String> {
        let mut replicas: Vec<String> = self.calls.iter().map(|c| c.replica.clone()).collect();
        replicas.sort();
        replicas.dedup();
        replicas
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_script_round_trips_and_reads_flat() {
        let script = Script::new()
            .at(
                0,
                "replica-1",
                Call::Acquire {
                    session: "s1".into(),
                    name: None,
                },
            )
            .at(13_000, "replica-1", Call::Release { lease: "s1".into() })
            .at(14_000, "replica-1", Call::Shutdown);
        assert_eq!(Script::from_json(&script.to_json()), Ok(script.clone()));
        let json = serde_json::to_string(&script.calls[1]).unwrap();
        assert_eq!(
            json,
            r#"{"at_ms":13000,"replica":"replica-1","call":"release","lease":"s1"}"#
        );
        let json = serde_json::to_string(&script.calls[2]).unwrap();
        assert_eq!(
            json,
            r#"{"at_ms":14000,"replica":"replica-1","call":"shutdown"}"#
        );
        assert_eq!(script.replicas(), ["replica-1"]);
        let fork = ScriptedCall {
            at_ms: 5,
            replica: "replica-2".into(),
            call: Call::Fork {
                mode: ForkMode::Linger,
            },
        };
        let json = serde_json::to_string(&fork).unwrap();
        assert_eq!(
            json,
            r#"{"at_ms":5,"replica":"replica-2","call":"fork","mode":"linger"}"#
        );
        assert_eq!(serde_json::from_str::<ScriptedCall>(&json).unwrap(), fork);
    }

    #[test]
    fn unknown_calls_and_fields_are_refused() {
        let text = r#"{"v":1,"calls":[{"at_ms":0,"replica":"replica-1","call":"explode"}]}"#;
        assert!(
            Script::from_json(text)
                .unwrap_err()
                .contains("unknown variant `explode`")
        );
        let text = r#"{"v":1,"calls":[],"extra":1}"#;
        assert!(
            Script::from_json(text)
                .unwrap_err()
                .contains("unknown field `extra`")
        );
    }
}
