//! One listing across boxes ([`list_page`]): exactly `limit` rows per page while more
//! match, every row reached once walking older, the same pages walking back newer.

use std::collections::HashSet;

use bandeja_core::admin::listing::{list_page, Cursor, Listed};
use bandeja_core::admin::{Admin, MessageFilter};
use bandeja_core::status::MessageStatus;

use super::fixture;

/// A row's identity across boxes.
fn keys(listed: &Listed) -> Vec<String> {
    listed
        .rows
        .iter()
        .map(|v| {
            format!(
                "{}/{}/{}",
                v.message.box_kind,
                v.message.record.id,
                v.message.subscriber.as_deref().unwrap_or("")
            )
        })
        .collect()
}

/// Walks every page older, then back newer, checking sizes, reach and agreement.
async fn walk<S: Admin>(store: &S, filter: &MessageFilter, limit: usize, total: usize) {
    let mut pages: Vec<Vec<String>> = Vec::new();
    let mut at: Option<Cursor> = None;
    let mut cursors = Vec::new();
    loop {
        let page = list_page(store, filter, limit, at)
            .await
            .expect("list a page");
        let remaining = total - pages.iter().map(Vec::len).sum::<usize>();
        assert_eq!(
            page.rows.len(),
            remaining.min(limit),
            "a page holds exactly `limit` rows while more match ({filter:?})"
        );
        assert_eq!(page.newer.is_some(), !pages.is_empty(), "newer link");
        pages.push(keys(&page));
        cursors.push(page.newer);
        // Cursors survive their text form.
        let older = page
            .older
            .map(|c| c.to_string().parse::<Cursor>().expect("cursor text"));
        match older {
            Some(next) => at = Some(next),
            None => break,
        }
        assert!(pages.len() <= total, "the walk ends");
    }
    let all: Vec<&String> = pages.iter().flatten().collect();
    let distinct: HashSet<&&String> = all.iter().collect();
    assert_eq!(all.len(), total, "every matching row is listed: {pages:?}");
    assert_eq!(distinct.len(), total, "no row is listed twice: {pages:?}");
    // Walking back newer from each page gives the page before it.
    for n in (1..pages.len()).rev() {
        let back = cursors[n].expect("a later page links back");
        let page = list_page(store, filter, limit, Some(back))
            .await
            .expect("list back");
        assert_eq!(
            keys(&page),
            pages[n - 1],
            "page {n} leads back to page {}",
            n - 1
        );
        assert!(page.older.is_some(), "a page walked back to links older");
    }
}

/// FAILED rows sit in the outbox and in the inbox: pages of two reach all three, and
/// every row of the fixture is reached with pages of three.
pub async fn pages_across_boxes_reach_every_row_once<S: Admin>(store: S) {
    fixture(&store).await;
    let failed = MessageFilter {
        status: Some(MessageStatus::Failed),
        ..Default::default()
    };
    walk(&store, &failed, 2, 3).await;
    walk(&store, &MessageFilter::default(), 3, 8).await;
    walk(&store, &MessageFilter::default(), 1, 8).await;
    walk(&store, &MessageFilter::default(), 8, 8).await;
    let none = list_page(&store, &failed, 0, None).await.expect("limit 0");
    assert!(none.rows.is_empty());
    let bad = "o.1.2".parse::<Cursor>().expect_err("short cursor");
    assert!(bad.to_string().contains("o.1.2"), "{bad}");
}
