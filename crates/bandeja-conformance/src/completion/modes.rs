//! The completion modes on the four boxes: `update` keeps COMPLETED rows, `delete` removes
//! them, `archive` moves them into the archive tables.

use bandeja_core::config::CompletionMode;
use bandeja_core::record::{BoxKind, MessageKind};
use bandeja_core::status::MessageStatus;
use bandeja_core::store::Inspect;

use super::{archived, run_one_of_each};
use crate::store::rows;

/// `update`: every box keeps its row, COMPLETED with a completion time; nothing archived.
pub async fn update_mode_keeps_completed_rows_in_every_box<S: Inspect>(store: S) {
    run_one_of_each(&store, CompletionMode::Update).await;
    for box_kind in BoxKind::ALL {
        let rows = rows(&store, box_kind).await;
        assert_eq!(rows.len(), 1, "{box_kind}");
        assert_eq!(
            rows[0].message.status,
            MessageStatus::Completed,
            "{box_kind}"
        );
        assert!(rows[0].completed_at.is_some(), "{box_kind}");
        assert!(archived(&store, box_kind).await.is_empty(), "{box_kind}");
    }
}

/// `delete`: every box is empty once its rows completed; nothing archived.
pub async fn delete_mode_removes_completed_rows_from_every_box<S: Inspect>(store: S) {
    run_one_of_each(&store, CompletionMode::Delete).await;
    for box_kind in BoxKind::ALL {
        assert!(rows(&store, box_kind).await.is_empty(), "{box_kind}");
        assert!(archived(&store, box_kind).await.is_empty(), "{box_kind}");
    }
}

/// `archive`: every box is empty and its archive holds the row, COMPLETED, unlocked.
pub async fn archive_mode_moves_completed_rows_into_the_archives<S: Inspect>(store: S) {
    run_one_of_each(&store, CompletionMode::Archive).await;
    for box_kind in BoxKind::ALL {
        assert!(rows(&store, box_kind).await.is_empty(), "{box_kind}");
        let archive = archived(&store, box_kind).await;
        assert_eq!(archive.len(), 1, "{box_kind}");
        let row = &archive[0];
        assert_eq!(row.message.status, MessageStatus::Completed, "{box_kind}");
        assert!(row.completed_at.is_some(), "{box_kind}");
        assert_eq!(row.locked_by, None, "{box_kind}");
        let expected = if box_kind.is_inbox() {
            Some(if box_kind.kind() == MessageKind::Event {
                "s".to_owned()
            } else {
                "archiver".to_owned()
            })
        } else {
            None
        };
        assert_eq!(row.message.subscriber, expected, "{box_kind}");
    }
}
