//! Walking every row that matches a filter, box by box and page by page, through
//! [`Admin::list`]: how destructive commands count what they would change.

use bandeja_core::admin::{Admin, MessageFilter, MessageView, Page};
use bandeja_core::{BoxKind, StoreError};

/// Rows fetched per page.
const PAGE: usize = 1000;

/// The boxes `filter` covers ([`MessageFilter::boxes`]), narrowed to `allowed`.
pub(crate) fn boxes(filter: &MessageFilter, allowed: &[BoxKind]) -> Vec<BoxKind> {
    filter
        .boxes()
        .into_iter()
        .filter(|b| allowed.contains(b))
        .collect()
}

/// Calls `visit` with every row of `box_kind` matching `filter` (whatever box the filter
/// names), newest first.
pub(crate) async fn each_row<S: Admin>(
    store: &S,
    filter: &MessageFilter,
    box_kind: BoxKind,
    mut visit: impl FnMut(&MessageView),
) -> Result<(), StoreError> {
    let filter = MessageFilter {
        box_kind: Some(box_kind),
        ..filter.clone()
    };
    let mut before_seq = None;
    loop {
        let page = Page {
            limit: PAGE,
            before_seq,
        };
        let rows = store.list(&filter, page).await?;
        rows.iter().for_each(&mut visit);
        let lowest = rows.iter().map(|r| r.message.seq).min();
        // A short page is the last; a page that does not move down would repeat forever.
        let moved_down = match (lowest, before_seq) {
            (Some(lowest), Some(before)) => lowest < before,
            (Some(_), None) => true,
            (None, _) => false,
        };
        if rows.len() < PAGE || !moved_down {
            return Ok(());
        }
        before_seq = lowest;
    }
}

/// How many rows of each box in `boxes` match `filter` (boxes without a match included).
pub(crate) async fn count<S: Admin>(
    store: &S,
    filter: &MessageFilter,
    boxes: &[BoxKind],
) -> Result<Vec<(BoxKind, u64)>, StoreError> {
    let mut counts = Vec::with_capacity(boxes.len());
    for &box_kind in boxes {
        let mut n = 0u64;
        each_row(store, filter, box_kind, |_| n += 1).await?;
        counts.push((box_kind, n));
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
