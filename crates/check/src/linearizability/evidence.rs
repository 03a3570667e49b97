//! A linearizability violation's evidence as data (docs/campaigns.md#evidence-is-data): the
//! engine's [`Explanation`] with the op ids of the history's operations it names, which the
//! report reads to ring them on the timeline and to name them; the lines a reviewer reads are
//! rendered from it.

use serde::{Deserialize, Serialize};

use super::Explanation;

/// The evidence of one linearizability violation: the explanation, and by op id (of the
/// history's `op` lines) the operation that cannot be placed and the longest valid prefix in
/// linearization order. An operation without an op line (an added final read) has no id and
/// is left out.
#[derive(Clone, PartialEq, Eq, Debug, Serialize, Deserialize)]
pub struct LinEvidence {
    /// Why the partition has no linearization.
    pub explanation: Explanation,
    /// The op id of the operation that cannot be placed, when it has one.
    pub stuck_op: Option<u64>,
    /// The op ids of the longest valid prefix, in linearization order.
    pub prefix_ops: Vec<u64>,
}

impl LinEvidence {
    /// The evidence as lines of prose: the explanation's lines, then `stuck: op N` and
    /// `prefix: op A, op B…` (each only when it names an operation).
    pub fn lines(&self) -> Vec<String> {
        let mut lines: Vec<String> = self
            .explanation
            .to_string()
            .lines()
            .map(str::to_owned)
            .collect();
        lines.extend(self.stuck_op.map(|id| format!("stuck: op {id}")));
        if !self.prefix_ops.is_empty() {
            lines.push(format!("prefix: {}", self.prefix_named()));
        }
        lines
    }

    /// The longest valid prefix by op id: `op A, op B…` (empty when it names none).
    pub fn prefix_named(&self) -> String {
        let ops: Vec<String> = self
            .prefix_ops
            .iter()
            .map(|id| format!("op {id}"))
            .collect();
        ops.join(", ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The evidence of [`explanation`], stuck on op 7 after ops 1 and 4.
    fn stuck_on_op_7() -> LinEvidence {
        LinEvidence {
            explanation: explanation(),
            stuck_op: Some(7),
            prefix_ops: vec![1, 4],
        }
    }

    /// An explanation of a lease partition, as the engine writes one.
    fn explanation() -> Explanation {
        Explanation {
            partition: "\"s1\"".into(),
            summary: "replica-2#0 acquire s1 got token 1 at [4.0 s, 4.1 s], but the lease \
                      could only be held by replica-1#0 (token 1) then"
                .into(),
            stuck_index: 3,
            stuck_process: 2,
            stuck_call: 4_000_000,
            stuck_return: Some(4_100_000),
            stuck: "replica-2#0 acquire s1 -> granted token 1 [4.0 s, 4.1 s]".into(),
            placed_before: 2,
            states_before: vec![
                "held by replica-1#0 token 1 until 10.0 s: the lease is held".into(),
                "held by replica-1#0 token 1 until 11.0 s: the lease is held".into(),
            ],
            states_omitted: 3,
            longest_prefix: vec![
                "replica-1#0 acquire s1 -> granted token 1 -> held by replica-1#0".into(),
                "replica-1#0 renew s1 -> renewed -> held by replica-1#0".into(),
            ],
            longest_prefix_indices: vec![0, 1],
        }
    }

    /// The lines are the prose results.jsonl version 1 kept (and junit.xml still shows),
    /// word for word.
    #[test]
    fn the_evidence_renders_as_the_explanation_then_the_op_ids() {
        let evidence = stuck_on_op_7();
        assert_eq!(
            evidence.lines(),
            [
                "replica-2#0 acquire s1 got token 1 at [4.0 s, 4.1 s], but the lease could only \
                 be held by replica-1#0 (token 1) then.",
                "  partition: \"s1\"",
                "  the operation that cannot be placed is #3 of the history: replica-2#0 acquire \
                 s1 -> granted token 1 [4.0 s, 4.1 s]",
                "  states possible just before it (with 2 earlier operations placed), and why \
                 none admits it:",
                "    held by replica-1#0 token 1 until 10.0 s: the lease is held",
                "    held by replica-1#0 token 1 until 11.0 s: the lease is held",
                "    … and 3 more",
                "  longest valid prefix, in linearization order (2 operations):",
                "      1. replica-1#0 acquire s1 -> granted token 1 -> held by replica-1#0",
                "      2. replica-1#0 renew s1 -> renewed -> held by replica-1#0",
                "stuck: op 7",
                "prefix: op 1, op 4",
            ]
        );
    }

    /// A single object names no partition, and operations without op lines name no ids.
    #[test]
    fn without_a_partition_or_op_ids_those_lines_are_left_out() {
        let mut explanation = explanation();
        explanation.partition = "()".into();
        explanation.placed_before = 1;
        explanation.states_omitted = 0;
        let evidence = LinEvidence {
            explanation,
            stuck_op: None,
            prefix_ops: Vec::new(),
        };
        let lines = evidence.lines();
        assert_eq!(lines.len(), 8, "{lines:#?}");
        assert!(!lines.iter().any(|l| l.contains("partition")), "{lines:#?}");
        assert_eq!(
            lines[2],
            "  states possible just before it (with 1 earlier operation placed), and why none \
             admits it:"
        );
        assert_eq!(
            lines.last().map(String::as_str),
            Some("      2. replica-1#0 renew s1 -> renewed -> held by replica-1#0")
        );
    }

    /// The parts the report lays out one by one are the ones the lines show.
    #[test]
    fn the_parts_are_those_of_the_lines() {
        let explanation = explanation();
        assert_eq!(explanation.named_partition(), Some("\"s1\""));
        assert_eq!(
            explanation.states_listed().last().map(String::as_str),
            Some("… and 3 more")
        );
        assert_eq!(explanation.states_listed().len(), 3);
    }

    /// In results.jsonl the evidence is its fields, and reads back whole.
    #[test]
    fn the_evidence_round_trips_through_json() {
        let evidence = stuck_on_op_7();
        let json = serde_json::to_value(&evidence).unwrap();
        assert_eq!(json["stuck_op"], 7);
        assert_eq!(json["prefix_ops"], serde_json::json!([1, 4]));
        assert_eq!(json["explanation"]["stuck_index"], 3);
        let back: LinEvidence = serde_json::from_value(json).unwrap();
        assert_eq!(back, evidence);
    }
}
