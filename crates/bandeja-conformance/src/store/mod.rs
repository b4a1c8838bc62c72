//! The store conformance suite: every store crate runs these against a fresh store (its own
//! database or schema per test) with [`store_conformance_tests!`](crate::store_conformance_tests).
//! Adding a store means passing this suite.

use std::collections::HashSet;
use std::time::Duration;

use bandeja_core::envelope::{Event, MessageId, Payload};
use bandeja_core::error::StoreErrorKind;
use bandeja_core::record::{BoxKind, MessageKind, MessageRecord, StoredMessage};
use bandeja_core::status::MessageStatus;
use bandeja_core::store::{ClaimRequest, Delivery, Inspect, Outcome, Resolution, RowView, Store};
use bandeja_core::tenant::TenantId;

/// The payload the suite emits.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Ping {
    /// A number to tell messages apart.
    pub n: u64,
}

impl Payload for Ping {
    const TYPE: &'static str = "conformance.Ping";
}

/// Generates one `#[tokio::test]` per conformance check. `$make` is an async fn returning
/// `(store, guard)`: a fresh, migrated store and whatever must live until the test ends
/// (e.g. a schema dropper).
#[macro_export]
macro_rules! store_conformance_tests {
    ($make:path) => {
        $crate::store_conformance_tests!(@tests $make;
            emission_commits_with_the_transaction_and_rolls_back_with_it,
            duplicate_outbox_id_is_a_duplicate_error_and_writes_nothing,
            claims_in_seq_order_with_a_lease,
            completion_is_guarded_by_the_lease_holder,
            retry_goes_back_to_pending_with_backoff,
            failure_is_terminal_with_the_error,
            inbox_dedup_counts_deliveries,
            expired_lease_is_reclaimed_by_another_worker,
            renewal_extends_the_lease_of_the_rows_still_held_only,
            per_key_order_holds_back_later_messages_of_the_key_only,
            complete_inside_the_handler_transaction,
            transfer_moves_outbox_rows_into_the_inbox_per_subscriber,
            release_returns_rows_without_spending_retries,
            concurrent_claims_never_overlap,
        );
    };
    (@tests $make:path; $($name:ident),* $(,)?) => {
        $(
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn $name() {
                let (store, _guard) = $make().await;
                $crate::store::$name(store).await;
            }
        )*
    };
    (@tests_in $module:ident $make:path; $($name:ident),* $(,)?) => {
        $(
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn $name() {
                let (store, _guard) = $make().await;
                $crate::$module::$name(store).await;
            }
        )*
    };
}

pub(crate) fn ping(n: u64, key: &str) -> MessageRecord {
    let mut record =
        MessageRecord::from_event(&Event::new("Ping", key, Ping { n })).expect("valid event");
    record.tenant_id = TenantId::default_tenant();
    record
}

pub(crate) fn request(worker: &str, limit: usize) -> ClaimRequest<'_> {
    ClaimRequest {
        worker_id: worker,
        limit,
        lease: Duration::from_secs(30),
        ordered: true,
        from_seq: None,
        tenant: None,
        subscribers: None,
    }
}

pub(crate) async fn emit<S: Store>(store: &S, records: &[MessageRecord]) {
    let mut tx = store.begin().await.expect("begin");
    store
        .insert_outbox(&mut *tx, MessageKind::Event, records)
        .await
        .expect("insert");
    store.commit(tx).await.expect("commit");
}

pub(crate) async fn rows<S: Inspect>(store: &S, box_kind: BoxKind) -> Vec<RowView> {
    store.rows(box_kind).await.expect("rows")
}

pub(crate) fn ids(messages: &[StoredMessage]) -> Vec<MessageId> {
    messages.iter().map(|m| m.record.id).collect()
}

pub(crate) fn outcome(message: &StoredMessage, resolution: Resolution) -> Outcome {
    Outcome {
        id: message.record.id,
        subscriber: message.subscriber.clone(),
        resolution,
    }
}

/// Commit → rows present and PENDING; rollback → no row.
pub async fn emission_commits_with_the_transaction_and_rolls_back_with_it<S: Inspect>(store: S) {
    let kept = ping(1, "a");
    emit(&store, std::slice::from_ref(&kept)).await;
    let mut tx = store.begin().await.expect("begin");
    store
        .insert_outbox(&mut *tx, MessageKind::Event, &[ping(2, "a")])
        .await
        .expect("insert");
    drop(tx); // rollback
    let rows = rows(&store, BoxKind::OutboxEvents).await;
    assert_eq!(rows.len(), 1, "only the committed message is in the outbox");
    let row = &rows[0];
    // Stores may normalise the JSON text (PostgreSQL's JSONB reorders keys): compare values.
    let as_json = |text: &str| serde_json::from_str::<serde_json::Value>(text).expect("json");
    assert_eq!(as_json(&row.message.record.payload), as_json(&kept.payload));
    let mut normalised = row.message.record.clone();
    normalised.payload.clone_from(&kept.payload);
    assert_eq!(normalised, kept, "every field round-trips");
    assert_eq!(row.message.status, MessageStatus::Pending);
    assert_eq!(row.message.retry_count, 0);
    assert!(
        store
            .claim(BoxKind::OutboxEvents, &request("w", 10))
            .await
            .expect("claim")
            .len()
            == 1
    );
}

/// Re-inserting an id is a `Duplicate` error and the whole batch is rejected.
pub async fn duplicate_outbox_id_is_a_duplicate_error_and_writes_nothing<S: Inspect>(store: S) {
    let first = ping(1, "a");
    emit(&store, std::slice::from_ref(&first)).await;
    let mut tx = store.begin().await.expect("begin");
    let err = store
        .insert_outbox(&mut *tx, MessageKind::Event, &[ping(2, "b"), first.clone()])
        .await
        .expect_err("duplicate id must fail");
    assert_eq!(err.kind, StoreErrorKind::Duplicate, "{err}");
    drop(tx);
    assert_eq!(rows(&store, BoxKind::OutboxEvents).await.len(), 1);
}

/// Claims take due rows by `seq`, set PROCESSING and the lease, and never hand a row out twice.
pub async fn claims_in_seq_order_with_a_lease<S: Inspect>(store: S) {
    let records: Vec<_> = (0..5).map(|n| ping(n, &format!("k{n}"))).collect();
    emit(&store, &records).await;
    let first = store
        .claim(BoxKind::OutboxEvents, &request("w1", 3))
        .await
        .expect("claim");
    assert_eq!(
        ids(&first),
        records[..3].iter().map(|r| r.id).collect::<Vec<_>>()
    );
    assert!(first.windows(2).all(|w| w[0].seq < w[1].seq));
    assert!(first
        .iter()
        .all(|m| m.status == MessageStatus::Processing && !m.reclaimed()));
    let second = store
        .claim(BoxKind::OutboxEvents, &request("w2", 10))
        .await
        .expect("claim");
    assert_eq!(
        ids(&second),
        records[3..].iter().map(|r| r.id).collect::<Vec<_>>()
    );
    assert!(store
        .claim(BoxKind::OutboxEvents, &request("w3", 10))
        .await
        .expect("claim")
        .is_empty());
    let rows = rows(&store, BoxKind::OutboxEvents).await;
    assert_eq!(rows[0].locked_by.as_deref(), Some("w1"));
    assert_eq!(rows[4].locked_by.as_deref(), Some("w2"));
    assert!(rows
        .iter()
        .all(|r| r.locked_until.is_some_and(|t| t > chrono::Utc::now())));
}

/// COMPLETED only by the worker that holds the claim.
pub async fn completion_is_guarded_by_the_lease_holder<S: Inspect>(store: S) {
    emit(&store, &[ping(1, "a")]).await;
    let claimed = store
        .claim(BoxKind::OutboxEvents, &request("w1", 10))
        .await
        .expect("claim");
    store
        .resolve(
            BoxKind::OutboxEvents,
            "intruder",
            &[outcome(&claimed[0], Resolution::Completed)],
        )
        .await
        .expect("resolve");
    assert_eq!(
        rows(&store, BoxKind::OutboxEvents).await[0].message.status,
        MessageStatus::Processing
    );
    store
        .resolve(
            BoxKind::OutboxEvents,
            "w1",
            &[outcome(&claimed[0], Resolution::Completed)],
        )
        .await
        .expect("resolve");
    let row = &rows(&store, BoxKind::OutboxEvents).await[0];
    assert_eq!(row.message.status, MessageStatus::Completed);
    assert!(row.completed_at.is_some());
    assert!(row.locked_by.is_none());
}

/// A retry goes back to PENDING with the new count, the error and a due time in the future.
pub async fn retry_goes_back_to_pending_with_backoff<S: Inspect>(store: S) {
    emit(&store, &[ping(1, "a"), ping(2, "b")]).await;
    let claimed = store
        .claim(BoxKind::OutboxEvents, &request("w", 10))
        .await
        .expect("claim");
    let later = Resolution::Retry {
        retry_count: 1,
        delay: Duration::from_secs(3600),
        error: "broker down".into(),
    };
    let now = Resolution::Retry {
        retry_count: 1,
        delay: Duration::ZERO,
        error: "blip".into(),
    };
    store
        .resolve(
            BoxKind::OutboxEvents,
            "w",
            &[outcome(&claimed[0], later), outcome(&claimed[1], now)],
        )
        .await
        .expect("resolve");
    let rows = rows(&store, BoxKind::OutboxEvents).await;
    assert_eq!(rows[0].message.status, MessageStatus::Pending);
    assert_eq!(rows[0].message.retry_count, 1);
    assert_eq!(rows[0].message.last_error.as_deref(), Some("broker down"));
    assert!(rows[0]
        .next_attempt_at
        .is_some_and(|t| t > chrono::Utc::now() + chrono::Duration::minutes(59)));
    let again = store
        .claim(BoxKind::OutboxEvents, &request("w", 10))
        .await
        .expect("claim");
    assert_eq!(
        ids(&again),
        vec![claimed[1].record.id],
        "only the row whose backoff is over is due"
    );
    assert_eq!(again[0].retry_count, 1);
}

/// FAILED is terminal and keeps the error.
pub async fn failure_is_terminal_with_the_error<S: Inspect>(store: S) {
    emit(&store, &[ping(1, "a")]).await;
    let claimed = store
        .claim(BoxKind::OutboxEvents, &request("w", 10))
        .await
        .expect("claim");
    let failed = Resolution::Failed {
        retry_count: 3,
        error: "no route".into(),
    };
    store
        .resolve(BoxKind::OutboxEvents, "w", &[outcome(&claimed[0], failed)])
        .await
        .expect("resolve");
    let row = &rows(&store, BoxKind::OutboxEvents).await[0];
    assert_eq!(row.message.status, MessageStatus::Failed);
    assert_eq!(row.message.retry_count, 3);
    assert_eq!(row.message.last_error.as_deref(), Some("no route"));
    assert!(store
        .claim(BoxKind::OutboxEvents, &request("w", 10))
        .await
        .expect("claim")
        .is_empty());
}

/// A second delivery of `(id, subscriber)` inserts nothing and counts the delivery.
pub async fn inbox_dedup_counts_deliveries<S: Inspect>(store: S) {
    let record = ping(1, "a");
    let subscribers = vec!["inventory".to_owned(), "notification".to_owned()];
    let delivery = Delivery {
        record: &record,
        subscribers: &subscribers,
    };
    let first = store
        .receive(MessageKind::Event, &[delivery])
        .await
        .expect("receive");
    assert_eq!((first.inserted, first.duplicates), (2, 0));
    let only_one = ["inventory".to_owned()];
    let again = store
        .receive(
            MessageKind::Event,
            &[
                Delivery {
                    record: &record,
                    subscribers: &only_one,
                },
                delivery,
            ],
        )
        .await
        .expect("receive");
    assert_eq!((again.inserted, again.duplicates), (0, 3));
    let rows = rows(&store, BoxKind::InboxEvents).await;
    assert_eq!(rows.len(), 2);
    let counts: Vec<_> = rows
        .iter()
        .map(|r| {
            (
                r.message.subscriber.clone().unwrap_or_default(),
                r.message.delivery_count,
            )
        })
        .collect();
    assert!(counts.contains(&("inventory".into(), 3)), "{counts:?}");
    assert!(counts.contains(&("notification".into(), 2)), "{counts:?}");
    assert!(rows
        .iter()
        .all(|r| r.message.status == MessageStatus::Pending));
}

/// A lease that expired is taken over: the takeover is counted (not as a failed attempt:
/// the retry count stays), the claim names the old holder, and the old holder can no
/// longer change the row.
pub async fn expired_lease_is_reclaimed_by_another_worker<S: Inspect>(store: S) {
    emit(&store, &[ping(1, "a")]).await;
    let short = ClaimRequest {
        lease: Duration::from_millis(1),
        ..request("dead", 10)
    };
    let claimed = store
        .claim(BoxKind::OutboxEvents, &short)
        .await
        .expect("claim");
    assert_eq!(claimed.len(), 1);
    let taken = bandeja_core::testing::eventually(Duration::from_secs(5), || async {
        let got = store
            .claim(BoxKind::OutboxEvents, &request("alive", 10))
            .await
            .expect("claim");
        (!got.is_empty()).then_some(got)
    })
    .await
    .expect("the expired lease is taken over");
    assert_eq!(taken[0].taken_over_from.as_deref(), Some("dead"));
    assert_eq!(taken[0].takeovers, 1);
    assert_eq!(
        taken[0].retry_count, 0,
        "a takeover is not a failed attempt"
    );
    store
        .resolve(
            BoxKind::OutboxEvents,
            "dead",
            &[outcome(&claimed[0], Resolution::Completed)],
        )
        .await
        .expect("resolve");
    let row = &rows(&store, BoxKind::OutboxEvents).await[0];
    assert_eq!(
        (row.message.status, row.locked_by.as_deref()),
        (MessageStatus::Processing, Some("alive"))
    );
}

/// Renewal gives a new lease to every row the worker still holds, in one call, and to
/// nothing else: not to a row it completed, not to another worker's rows.
pub async fn renewal_extends_the_lease_of_the_rows_still_held_only<S: Inspect>(store: S) {
    emit(&store, &[ping(1, "a"), ping(2, "b"), ping(3, "c")]).await;
    let short = ClaimRequest {
        lease: Duration::from_secs(2),
        ..request("holder", 2)
    };
    let claimed = store
        .claim(BoxKind::OutboxEvents, &short)
        .await
        .expect("claim");
    assert_eq!(claimed.len(), 2);
    let other = store
        .claim(BoxKind::OutboxEvents, &request("other", 10))
        .await
        .expect("claim");
    assert_eq!(other.len(), 1);
    store
        .resolve(
            BoxKind::OutboxEvents,
            "holder",
            &[outcome(&claimed[0], Resolution::Completed)],
        )
        .await
        .expect("resolve");
    let before = rows(&store, BoxKind::OutboxEvents).await;
    let renewed = store
        .renew(BoxKind::OutboxEvents, "holder", Duration::from_secs(60))
        .await
        .expect("renew");
    assert_eq!(
        renewed,
        vec![(claimed[1].record.id, None)],
        "only the row the holder still holds"
    );
    let after = rows(&store, BoxKind::OutboxEvents).await;
    let until = |rows: &[RowView], id| {
        rows.iter()
            .find(|r| r.message.record.id == id)
            .and_then(|r| r.locked_until)
    };
    let held = claimed[1].record.id;
    let extended = until(&after, held)
        .zip(until(&before, held))
        .map(|(after, before)| (after - before).num_seconds());
    assert!(
        extended.is_some_and(|s| s >= 50),
        "the held row's lease moved forward by about 58 s: {extended:?}"
    );
    let others = other[0].record.id;
    assert_eq!(
        until(&after, others),
        until(&before, others),
        "another worker's row"
    );
    assert_eq!(until(&after, claimed[0].record.id), None, "a completed row");
}

/// A claimed row that cannot be decoded (here: `corrupt` broke its stored headers, as a
/// hand-written row or an incompatible version would) is not returned and does not fail
/// the claim; the rows beside it are claimed as usual, and it is not claimed again.
/// Returns its id: each store's tests call this with their own way of breaking a row,
/// then check with their own SQL that it is FAILED with the decode error (inspection
/// cannot read it either).
pub async fn an_undecodable_claimed_row_blocks_nothing<S, F, Fut>(store: S, corrupt: F) -> MessageId
where
    S: Inspect,
    F: FnOnce(S, MessageId) -> Fut,
    Fut: std::future::Future<Output = ()>,
{
    let (bad, good) = (ping(1, "a"), ping(2, "b"));
    emit(&store, &[bad.clone(), good.clone()]).await;
    corrupt(store.clone(), bad.id).await;
    let claimed = store
        .claim(BoxKind::OutboxEvents, &request("w", 10))
        .await
        .expect("a bad row does not fail the claim");
    assert_eq!(
        claimed.iter().map(|m| m.record.id).collect::<Vec<_>>(),
        vec![good.id]
    );
    let again = store
        .claim(BoxKind::OutboxEvents, &request("w2", 10))
        .await
        .expect("claim");
    assert!(again.is_empty(), "the bad row is not claimed again");
    bad.id
}

/// With ordering on, only the oldest live message of a key is claimable; other keys are not held back.
pub async fn per_key_order_holds_back_later_messages_of_the_key_only<S: Inspect>(store: S) {
    let records = [ping(1, "k1"), ping(2, "k1"), ping(3, "k2")];
    let subscribers = vec!["s".to_owned()];
    let deliveries: Vec<_> = records
        .iter()
        .map(|record| Delivery {
            record,
            subscribers: &subscribers,
        })
        .collect();
    store
        .receive(MessageKind::Event, &deliveries)
        .await
        .expect("receive");
    let first = store
        .claim(BoxKind::InboxEvents, &request("w", 10))
        .await
        .expect("claim");
    assert_eq!(ids(&first), vec![records[0].id, records[2].id]);
    assert!(store
        .claim(BoxKind::InboxEvents, &request("w", 10))
        .await
        .expect("claim")
        .is_empty());
    let retry = Resolution::Retry {
        retry_count: 1,
        delay: Duration::ZERO,
        error: "x".into(),
    };
    store
        .resolve(BoxKind::InboxEvents, "w", &[outcome(&first[0], retry)])
        .await
        .expect("resolve");
    let again = store
        .claim(BoxKind::InboxEvents, &request("w", 10))
        .await
        .expect("claim");
    assert_eq!(
        ids(&again),
        vec![records[0].id],
        "the failed head is retried before the rest of its key"
    );
    store
        .resolve(
            BoxKind::InboxEvents,
            "w",
            &[outcome(&again[0], Resolution::Completed)],
        )
        .await
        .expect("resolve");
    let next = store
        .claim(BoxKind::InboxEvents, &request("w", 10))
        .await
        .expect("claim");
    assert_eq!(ids(&next), vec![records[1].id]);
    let unordered = ClaimRequest {
        ordered: false,
        ..request("w", 10)
    };
    emit(&store, &[ping(4, "k3"), ping(5, "k3")]).await;
    assert_eq!(
        store
            .claim(BoxKind::OutboxEvents, &unordered)
            .await
            .expect("claim")
            .len(),
        2
    );
}

/// `complete_in` marks the row inside the caller's transaction, only for the holder.
pub async fn complete_inside_the_handler_transaction<S: Inspect>(store: S) {
    let record = ping(1, "a");
    let subscribers = vec!["s".to_owned()];
    store
        .receive(
            MessageKind::Event,
            &[Delivery {
                record: &record,
                subscribers: &subscribers,
            }],
        )
        .await
        .expect("receive");
    let claimed = store
        .claim(BoxKind::InboxEvents, &request("w", 10))
        .await
        .expect("claim");
    let mut tx = store.begin().await.expect("begin");
    let intruder = store
        .complete_in(&mut tx, BoxKind::InboxEvents, record.id, Some("s"), "other")
        .await
        .expect("complete");
    assert!(!intruder);
    assert!(store
        .complete_in(&mut tx, BoxKind::InboxEvents, record.id, Some("s"), "w")
        .await
        .expect("complete"));
    drop(tx);
    assert_eq!(
        rows(&store, BoxKind::InboxEvents).await[0].message.status,
        MessageStatus::Processing,
        "rolled back"
    );
    let mut tx = store.begin().await.expect("begin");
    assert!(store
        .complete_in(
            &mut tx,
            BoxKind::InboxEvents,
            claimed[0].record.id,
            Some("s"),
            "w"
        )
        .await
        .expect("complete"));
    store.commit(tx).await.expect("commit");
    assert_eq!(
        rows(&store, BoxKind::InboxEvents).await[0].message.status,
        MessageStatus::Completed
    );
}

/// The in-process transfer: one inbox row per subscriber (in the inbox tenant), outbox COMPLETED.
pub async fn transfer_moves_outbox_rows_into_the_inbox_per_subscriber<S: Inspect>(store: S) {
    emit(&store, &[ping(1, "a"), ping(2, "b")]).await;
    let claimed = store
        .claim(BoxKind::OutboxEvents, &request("w", 10))
        .await
        .expect("claim");
    let subscribers = vec!["inventory".to_owned(), "notification".to_owned()];
    let deliveries = [Delivery {
        record: &claimed[0].record,
        subscribers: &subscribers,
    }];
    let outcomes = [
        outcome(&claimed[0], Resolution::Completed),
        outcome(
            &claimed[1],
            Resolution::Failed {
                retry_count: 0,
                error: "no handler".into(),
            },
        ),
    ];
    let report = store
        .transfer(MessageKind::Event, "w", &deliveries, &outcomes)
        .await
        .expect("transfer");
    assert_eq!(report.inserted, 2);
    let outbox = rows(&store, BoxKind::OutboxEvents).await;
    assert_eq!(outbox[0].message.status, MessageStatus::Completed);
    assert_eq!(outbox[1].message.status, MessageStatus::Failed);
    let inbox = rows(&store, BoxKind::InboxEvents).await;
    assert_eq!(inbox.len(), 2);
    assert!(inbox.iter().all(
        |r| r.message.record == claimed[0].record && r.message.status == MessageStatus::Pending
    ));
    assert!(inbox.iter().all(|r| r.message.delivery_count == 1));
}

/// Release (shutdown) returns rows to PENDING, due now, retry count unchanged.
pub async fn release_returns_rows_without_spending_retries<S: Inspect>(store: S) {
    emit(&store, &[ping(1, "a")]).await;
    let claimed = store
        .claim(BoxKind::OutboxEvents, &request("w", 10))
        .await
        .expect("claim");
    store
        .resolve(
            BoxKind::OutboxEvents,
            "w",
            &[outcome(&claimed[0], Resolution::Release)],
        )
        .await
        .expect("resolve");
    let again = store
        .claim(BoxKind::OutboxEvents, &request("w2", 10))
        .await
        .expect("claim");
    assert_eq!(again.len(), 1);
    assert_eq!(again[0].retry_count, 0);
    assert!(!again[0].reclaimed());
}

/// Four workers claiming at once get disjoint sets that together cover every row.
pub async fn concurrent_claims_never_overlap<S: Inspect>(store: S) {
    let records: Vec<_> = (0..200).map(|n| ping(n, &format!("k{n}"))).collect();
    emit(&store, &records).await;
    let mut tasks = Vec::new();
    for w in 0..4 {
        let store = store.clone();
        tasks.push(tokio::spawn(async move {
            let worker = format!("w{w}");
            let mut mine = Vec::new();
            loop {
                let got = store
                    .claim(BoxKind::OutboxEvents, &request(&worker, 7))
                    .await
                    .expect("claim");
                if got.is_empty() {
                    break mine;
                }
                mine.extend(ids(&got));
            }
        }));
    }
    let mut seen = HashSet::new();
    let mut total = 0;
    for task in tasks {
        let mine = task.await.expect("task");
        total += mine.len();
        seen.extend(mine);
    }
    assert_eq!(total, 200, "no row claimed twice");
    assert_eq!(seen.len(), 200, "every row claimed");
}
