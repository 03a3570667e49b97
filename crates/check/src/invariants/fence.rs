//! FENCE — fence epochs in each ledger strictly increase; after `Fence{e}` commits, no record
//! from a writer with epoch < e commits.
//!
//! Judged from the final ledger, per session in `seq` order. Each writer id has the epoch of
//! its own fence record; an event whose writer has no fence before it in the ledger cannot be
//! placed under any epoch and is a violation too.

use std::collections::BTreeMap;

use super::{Check, Evidence, InvariantReport, who};
use leasesim_history::{HistRecord, HistWriterId, History};

/// Checks FENCE over `history`.
pub fn check(history: &History) -> InvariantReport {
    let mut report = InvariantReport::new(Check::Fence);
    for (session, mut records) in history.final_ledger() {
        records.sort_by_key(|(seq, _)| *seq);
        // writer → (epoch, seq of its fence)
        let mut epochs: BTreeMap<&HistWriterId, (u64, u64)> = BTreeMap::new();
        // the highest fence so far: (epoch, seq)
        let mut highest: Option<(u64, u64)> = None;
        for (seq, record) in &records {
            report.checks += 1;
            let writer = record.writer_id();
            match record {
                HistRecord::Fence { epoch, .. } => {
                    if let Some((top, top_seq)) = highest
                        && *epoch <= top
                    {
                        report.violation(
                            format!(
                                "{session}: fence epoch {epoch} at seq {seq} does not exceed the earlier fence epoch {top} at seq {top_seq}"
                            ),
                            vec![Evidence::seq(&session, top_seq), Evidence::seq(&session, *seq)],
                        );
                    }
                    epochs.entry(writer).or_insert((*epoch, *seq));
                    if highest.is_none_or(|(top, _)| *epoch > top) {
                        highest = Some((*epoch, *seq));
                    }
                }
                HistRecord::Event { .. } => match (epochs.get(writer), highest) {
                    (None, _) => report.violation(
                        format!(
                            "{session}: event at seq {seq} from writer {}/{} whose fence is not before it in the ledger",
                            who(&writer.owner),
                            writer.journal
                        ),
                        vec![Evidence::seq(&session, *seq)],
                    ),
                    (Some(&(epoch, fence_seq)), Some((top, top_seq))) if epoch < top => report
                        .violation(
                            format!(
                                "{session}: event at seq {seq} from writer {}/{} of epoch {epoch} (fence at seq {fence_seq}) committed after fence epoch {top} at seq {top_seq}",
                                who(&writer.owner),
                                writer.journal
                            ),
                            vec![
                                Evidence::seq(&session, fence_seq),
                                Evidence::seq(&session, top_seq),
                                Evidence::seq(&session, *seq),
                            ],
                        ),
                    _ => {}
                },
            }
        }
    }
    report
}
