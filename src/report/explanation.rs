//! A linearizability violation's evidence read back into its parts, for report.html to lay
//! out: the stuck operation, the states possible before it, the longest valid prefix, and the
//! op ids the timeline draws them on.
//!
//! The evidence is what [`super::checks::check_records`] writes: the lines of the
//! engine's explanation ([`crate::check::linearizability::engine::Explanation`]'s `Display`:
//! a summary sentence, `partition: …`, `the operation that cannot be placed is #N of the
//! history: …`, `states possible just before it …:` and its indented states, `longest valid
//! prefix, in linearization order (…):` and its numbered operations), then `stuck: op N` and
//! `prefix: op A, op B…` by op id. Evidence of any other check is not an explanation.

/// The parts of one linearizability explanation (text as the evidence gives it).
#[derive(Clone, PartialEq, Eq, Debug, Default)]
pub struct LinExplanation {
    /// The summary sentence.
    pub summary: String,
    /// The partition (the key) without a linearization, when there are several.
    pub partition: Option<String>,
    /// The operation that cannot be placed, in plain words.
    pub stuck: String,
    /// Its op id in the history, when it has one.
    pub stuck_op: Option<u64>,
    /// The states line's own heading (how many earlier operations were placed).
    pub states_heading: String,
    /// The states possible just before it, each with why it cannot go on from it (and an
    /// `… and N more` line when some were left out).
    pub states_before: Vec<String>,
    /// The longest valid prefix, in linearization order: each operation and the state it
    /// leaves.
    pub longest_prefix: Vec<String>,
    /// The prefix's op ids in the history.
    pub prefix_ops: Vec<u64>,
}

/// Which indented list the lines being read belong to.
enum Section {
    None,
    States,
    Prefix,
}

impl LinExplanation {
    /// Reads `evidence`; `None` when it is not a linearizability explanation (it names no
    /// operation that cannot be placed).
    pub fn parse(evidence: &[String]) -> Option<Self> {
        let mut explanation = LinExplanation::default();
        let mut section = Section::None;
        let mut found = false;
        for (index, line) in evidence.iter().enumerate() {
            let text = line.trim();
            if index == 0 && !line.starts_with(' ') {
                explanation.summary = text.to_owned();
            } else if let Some(rest) = text.strip_prefix("partition: ") {
                explanation.partition = Some(rest.to_owned());
            } else if let Some(rest) = text.strip_prefix("the operation that cannot be placed is ")
            {
                found = true;
                explanation.stuck = rest
                    .split_once(": ")
                    .map_or(rest, |(_, stuck)| stuck)
                    .to_owned();
                section = Section::None;
            } else if text.starts_with("states possible just before it") {
                explanation.states_heading = text.trim_end_matches(':').to_owned();
                section = Section::States;
            } else if text.starts_with("longest valid prefix") {
                section = Section::Prefix;
            } else if let Some(rest) = line.strip_prefix("stuck: ") {
                explanation.stuck_op = op_ids(rest).first().copied();
            } else if let Some(rest) = line.strip_prefix("prefix: ") {
                explanation.prefix_ops = op_ids(rest);
            } else if line.starts_with("    ") {
                match section {
                    Section::States => explanation.states_before.push(text.to_owned()),
                    Section::Prefix => explanation
                        .longest_prefix
                        .push(text.split_once(". ").map_or(text, |(_, op)| op).to_owned()),
                    Section::None => {}
                }
            }
        }
        found.then_some(explanation)
    }
}

/// The ids of `op A, op B…`.
fn op_ids(text: &str) -> Vec<u64> {
    text.split(',')
        .filter_map(|part| part.trim().strip_prefix("op ")?.parse().ok())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::check::linearizability::Explanation;

    /// The evidence `check_records` writes for `explanation`: its lines, then the op ids.
    fn evidence_of(explanation: &Explanation, stuck: u64, prefix: &[u64]) -> Vec<String> {
        let mut evidence: Vec<String> =
            explanation.to_string().lines().map(str::to_owned).collect();
        evidence.push(format!("stuck: op {stuck}"));
        let ops: Vec<String> = prefix.iter().map(|id| format!("op {id}")).collect();
        evidence.push(format!("prefix: {}", ops.join(", ")));
        evidence
    }

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

    /// What the engine writes reads back part by part.
    #[test]
    fn an_explanation_reads_back_into_its_parts() {
        let engine = explanation();
        let parsed = LinExplanation::parse(&evidence_of(&engine, 7, &[1, 4])).unwrap();
        assert_eq!(parsed.summary, format!("{}.", engine.summary));
        assert_eq!(parsed.partition.as_deref(), Some("\"s1\""));
        assert_eq!(parsed.stuck, engine.stuck);
        assert_eq!(parsed.stuck_op, Some(7));
        assert_eq!(
            parsed.states_heading,
            "states possible just before it (with 2 earlier operations placed), and why none \
             admits it"
        );
        let mut states = engine.states_before.clone();
        states.push("… and 3 more".into());
        assert_eq!(parsed.states_before, states);
        assert_eq!(parsed.longest_prefix, engine.longest_prefix);
        assert_eq!(parsed.prefix_ops, vec![1, 4]);
    }

    #[test]
    fn other_evidence_is_no_explanation() {
        let evidence = vec!["op 3".to_owned(), "ledger s1 seq 4".to_owned()];
        assert_eq!(LinExplanation::parse(&evidence), None);
        assert_eq!(LinExplanation::parse(&[]), None);
    }
}
