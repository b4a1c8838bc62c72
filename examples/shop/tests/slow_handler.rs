//! SQLite has a single writer: a slow handler must not hold it. While the notification
//! handler waits (before writing), new orders are still accepted quickly. The shop runs in
//! this process, its router called with `oneshot`.

mod common;

use std::time::{Duration, Instant};

use common::in_process::App;
use common::{inbox_row, order_id, rows_for_order, wait_for};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn orders_are_accepted_quickly_while_a_slow_handler_is_waiting() {
    let app = App::start("slow-handler", Duration::from_secs(10)).await;

    let first = order_id(&app.place_order("alice", &[("MS-001", 1)]).await);
    wait_for(
        "the notification row PROCESSING",
        Duration::from_secs(20),
        || async {
            inbox_row(app.pool(), first, "notification")
                .await
                .filter(|row| row.0 == "PROCESSING")
        },
    )
    .await;

    for n in 0..5 {
        let started = Instant::now();
        app.place_order("bob", &[("MS-001", 1)]).await;
        let took = started.elapsed();
        assert!(
            took < Duration::from_secs(1),
            "order {n} took {took:?} while the handler waited"
        );
    }

    // The handler was still in its pause the whole time.
    assert_eq!(
        inbox_row(app.pool(), first, "notification")
            .await
            .map(|row| row.0)
            .as_deref(),
        Some("PROCESSING")
    );
    assert_eq!(rows_for_order(app.pool(), "sent_emails", first).await, 0);
}
