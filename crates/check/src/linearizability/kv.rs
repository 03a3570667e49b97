//! A key-value store with get, put and append, checked per key (the porcupine kv histories).
//!
//! Every key starts as the empty string; a get returns the key's value, a put replaces it, an
//! append concatenates to it.

use super::{Model, join_with_or};

/// A call on the store.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum KvInput {
    /// Read a key.
    Get {
        /// The key.
        key: String,
    },
    /// Replace a key's value.
    Put {
        /// The key.
        key: String,
        /// The new value.
        value: String,
    },
    /// Append to a key's value.
    Append {
        /// The key.
        key: String,
        /// The suffix.
        value: String,
    },
}

impl KvInput {
    /// The key the call touches.
    pub fn key(&self) -> &str {
        match self {
            KvInput::Get { key } | KvInput::Put { key, .. } | KvInput::Append { key, .. } => key,
        }
    }
}

/// A completed call's response.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum KvOutput {
    /// A get's result.
    Got(String),
    /// A put or append completed.
    Done,
}

/// The key-value model, partitioned per key.
#[derive(Clone, Copy, Debug, Default)]
pub struct KvStore;

/// A key's value as the search holds it: shared, so that a state is cloned (memo entries, reads
/// that leave it as it is) by a reference count, not by copying the whole value.
pub type KvValue = std::sync::Arc<str>;

impl Model for KvStore {
    type State = KvValue;
    type Input = KvInput;
    type Output = KvOutput;
    type Key = String;

    fn init(&self) -> KvValue {
        KvValue::from("")
    }

    fn step(&self, state: &KvValue, input: &KvInput, output: Option<&KvOutput>) -> Option<KvValue> {
        match (input, output) {
            (KvInput::Get { .. }, Some(KvOutput::Got(seen))) => {
                (seen.as_str() == &**state).then(|| state.clone())
            }
            (KvInput::Get { .. }, None) => Some(state.clone()),
            (KvInput::Put { value, .. }, Some(KvOutput::Done) | None) => {
                Some(KvValue::from(value.as_str()))
            }
            (KvInput::Append { value, .. }, Some(KvOutput::Done) | None) => {
                let mut appended = String::with_capacity(state.len() + value.len());
                appended.push_str(state);
                appended.push_str(value);
                Some(KvValue::from(appended))
            }
            _ => None,
        }
    }

    fn key(&self, input: &KvInput) -> String {
        input.key().to_string()
    }

    /// A get.
    fn is_read_only(&self, input: &KvInput, output: &KvOutput) -> bool {
        matches!((input, output), (KvInput::Get { .. }, KvOutput::Got(_)))
    }

    fn describe_state(&self, state: &KvValue) -> String {
        format!("the key holds {state:?}")
    }

    fn describe_op(&self, input: &KvInput, output: Option<&KvOutput>) -> String {
        match (input, output) {
            (KvInput::Get { key }, Some(KvOutput::Got(v))) => {
                format!("read {v:?} from key {key:?}")
            }
            (KvInput::Get { key }, _) => format!("read key {key:?} (outcome unknown)"),
            (KvInput::Put { key, value }, Some(KvOutput::Done)) => {
                format!("put {value:?} into key {key:?}")
            }
            (KvInput::Put { key, value }, _) => {
                format!("put {value:?} into key {key:?} (outcome unknown)")
            }
            (KvInput::Append { key, value }, Some(KvOutput::Done)) => {
                format!("appended {value:?} to key {key:?}")
            }
            (KvInput::Append { key, value }, _) => {
                format!("appended {value:?} to key {key:?} (outcome unknown)")
            }
        }
    }

    fn describe_rejection(
        &self,
        state: &KvValue,
        input: &KvInput,
        output: Option<&KvOutput>,
    ) -> String {
        match (input, output) {
            (KvInput::Get { .. }, Some(KvOutput::Got(seen))) => {
                format!("a read then returns {state:?}, not {seen:?}")
            }
            _ => "the response does not fit the call".to_string(),
        }
    }

    fn describe_possible_states(&self, states: &[&KvValue]) -> String {
        let values: Vec<String> = states.iter().map(|s| format!("{s:?}")).collect();
        format!("the key could only hold {}", join_with_or(&values))
    }
}
