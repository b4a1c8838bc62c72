//! How destructive commands count what they would change, box by box, with
//! [`Admin::count`] (a `count(*)` in the database, no rows read).

use bandeja_core::admin::{Admin, MessageFilter};
use bandeja_core::{BoxKind, StoreError};

/// The boxes `filter` covers ([`MessageFilter::boxes`]), narrowed to `allowed`.
pub(crate) fn boxes(filter: &MessageFilter, allowed: &[BoxKind]) -> Vec<BoxKind> {
    filter
        .boxes()
        .into_iter()
        .filter(|b| allowed.contains(b))
        .collect()
}

/// How many rows of each box in `boxes` match `filter` (boxes without a match included):
/// one [`Admin::count`] per box, counted in the database.
pub(crate) async fn count<S: Admin>(
    store: &S,
    filter: &MessageFilter,
    boxes: &[BoxKind],
) -> Result<Vec<(BoxKind, u64)>, StoreError> {
    let mut counts = Vec::with_capacity(boxes.len());
    for &box_kind in boxes {
        let one_box = MessageFilter {
            box_kind: Some(box_kind),
            ..filter.clone()
        };
        counts.push((box_kind, store.count(&one_box).await?));
    }
    Ok(counts)
}

/// `12 rows (inbox_events 10, outbox_commands 2)`.
pub(crate) fn describe(counts: &[(BoxKind, u64)]) -> String {
    let total: u64 = counts.iter().map(|(_, n)| n).sum();
    let parts: Vec<String> = counts
        .iter()
        .filter(|(_, n)| *n > 0)
        .map(|(b, n)| format!("{b} {n}"))
        .collect();
    if parts.is_empty() {
        crate::output::rows(total)
    } else {
        format!("{} ({})", crate::output::rows(total), parts.join(", "))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn boxes_are_narrowed_by_the_filter() {
        let all = MessageFilter::default();
        assert_eq!(boxes(&all, &BoxKind::ALL), BoxKind::ALL.to_vec());
        let inbox = MessageFilter {
            box_kind: Some(BoxKind::InboxEvents),
            ..MessageFilter::default()
        };
        assert_eq!(
            boxes(&inbox, &[BoxKind::InboxEvents, BoxKind::InboxCommands]),
            vec![BoxKind::InboxEvents]
        );
        assert!(boxes(&inbox, &[BoxKind::OutboxEvents]).is_empty());
    }

    #[test]
    fn counts_are_described_per_box() {
        let counts = [(BoxKind::InboxEvents, 10), (BoxKind::OutboxCommands, 2)];
        assert_eq!(
            describe(&counts),
            "12 rows (inbox_events 10, outbox_commands 2)"
        );
        assert_eq!(describe(&[(BoxKind::InboxEvents, 0)]), "0 rows");
    }
}
