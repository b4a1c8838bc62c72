//! Changing events: a handler reads the payloads stored at older schema versions through
//! its type's upcasters, and newer ones tolerantly; a newer version it cannot read is
//! FAILED naming both versions and completes once a handler that knows it is deployed and
//! the row retried. Stored messages are never rewritten.

use std::sync::{Arc, Mutex};

use bandeja_core::admin::{Admin, MessageFilter};
use bandeja_core::envelope::{Event, Payload};
use bandeja_core::error::HandlerError;
use bandeja_core::processing::{EventHandler, HandlerContext};
use bandeja_core::record::BoxKind;
use bandeja_core::runtime::Bandeja;
use bandeja_core::status::MessageStatus;
use bandeja_core::store::{Inspect, RowView, Store};
use bandeja_core::upcast::{UpcastError, Upcaster};
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use super::wait_rows;
use crate::fixtures::{fast_config, outbox_of};

const PAID: &str = "conformance.Paid";

/// Version 1: the amount in cents under `amount`.
#[derive(Serialize, Deserialize)]
struct PaidV1 {
    order: u64,
    amount: u64,
}

impl Payload for PaidV1 {
    const TYPE: &'static str = PAID;
    const VERSION: u32 = 1;
}

/// Version 2 renamed `amount` to `cents`.
#[derive(Serialize, Deserialize)]
struct PaidV2 {
    order: u64,
    cents: u64,
}

impl Payload for PaidV2 {
    const TYPE: &'static str = PAID;
    const VERSION: u32 = 2;
}

/// Version 3, the handler's: `currency` added (EUR before it existed).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct PaidV3 {
    order: u64,
    cents: u64,
    currency: String,
}

fn v1_to_v2(mut v1: Value) -> Result<Value, UpcastError> {
    let amount = v1
        .as_object_mut()
        .and_then(|o| o.remove("amount"))
        .ok_or_else(|| UpcastError::new("version 1 without `amount`"))?;
    v1["cents"] = amount;
    Ok(v1)
}

fn v2_to_v3(mut v2: Value) -> Result<Value, UpcastError> {
    v2["currency"] = json!("EUR");
    Ok(v2)
}

impl Payload for PaidV3 {
    const TYPE: &'static str = PAID;
    const VERSION: u32 = 3;
    const UPCASTERS: &'static [Upcaster] =
        &[Upcaster::new(1, v1_to_v2), Upcaster::new(2, v2_to_v3)];
}

/// Version 4, from a producer deployed first: only a field added (readable by version 3).
#[derive(Serialize, Deserialize)]
struct PaidV4 {
    order: u64,
    cents: u64,
    currency: String,
    note: String,
}

impl Payload for PaidV4 {
    const TYPE: &'static str = PAID;
    const VERSION: u32 = 4;
}

/// Version 5: `cents` became a decimal string, which version 3 cannot read.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct PaidV5 {
    order: u64,
    cents: String,
    currency: String,
}

impl Payload for PaidV5 {
    const TYPE: &'static str = PAID;
    const VERSION: u32 = 5;
}

/// What a handler saw, recorded outside its transaction: (order, what it read).
type Seen<T> = Arc<Mutex<Vec<T>>>;

#[derive(Clone)]
struct Reader<T> {
    seen: Seen<T>,
}

impl<S: Store, T: Payload + Clone> EventHandler<S, T> for Reader<T> {
    async fn handle(
        &self,
        _: &mut HandlerContext<'_, S>,
        event: Event<T>,
    ) -> Result<(), HandlerError> {
        if let Ok(mut seen) = self.seen.lock() {
            seen.push(event.payload);
        }
        Ok(())
    }
}

fn taken<T: Clone>(seen: &Seen<T>) -> Vec<T> {
    seen.lock().map(|s| s.clone()).unwrap_or_default()
}

fn order_of(row: &RowView) -> u64 {
    serde_json::from_str::<Value>(&row.message.record.payload)
        .ok()
        .and_then(|v| v["order"].as_u64())
        .unwrap_or(u64::MAX)
}

/// A handler of version 3 reads rows written at 1 (renamed field) and 2 (field added later)
/// through its upcasters, 3 as it is and 4 (a field it does not know) tolerantly. Version 5
/// (a type change) is FAILED with a reason naming both versions; once a handler of 5 is
/// deployed, `retry` completes it. The rows keep their stored JSON and version throughout.
pub async fn a_handler_reads_older_versions_through_upcasters_and_newer_ones_tolerantly<
    S: Inspect + Admin,
>(
    store: S,
) {
    let old = Reader::<PaidV3> {
        seen: Seen::default(),
    };
    let running = Bandeja::builder(store.clone())
        .config(fast_config())
        .on_event::<PaidV3, _>("billing", old.clone())
        .build()
        .expect("build")
        .start()
        .await
        .expect("start");
    let outbox = outbox_of(&store);
    let mut tx = store.begin().await.expect("begin");
    let v1 = Event::new(
        "Order",
        "1",
        PaidV1 {
            order: 1,
            amount: 1000,
        },
    );
    outbox.emit(&mut tx, &v1).await.expect("emit v1");
    let v2 = Event::new(
        "Order",
        "2",
        PaidV2 {
            order: 2,
            cents: 2000,
        },
    );
    outbox.emit(&mut tx, &v2).await.expect("emit v2");
    let v3 = Event::new(
        "Order",
        "3",
        PaidV3 {
            order: 3,
            cents: 3000,
            currency: "USD".into(),
        },
    );
    outbox.emit(&mut tx, &v3).await.expect("emit v3");
    let v4 = Event::new(
        "Order",
        "4",
        PaidV4 {
            order: 4,
            cents: 4000,
            currency: "USD".into(),
            note: "gift".into(),
        },
    );
    outbox.emit(&mut tx, &v4).await.expect("emit v4");
    let v5 = Event::new(
        "Order",
        "5",
        PaidV5 {
            order: 5,
            cents: "50.00".into(),
            currency: "USD".into(),
        },
    );
    outbox.emit(&mut tx, &v5).await.expect("emit v5");
    store.commit(tx).await.expect("commit");

    let settled = |rows: &[RowView]| {
        rows.len() == 5
            && rows.iter().all(|r| {
                matches!(
                    r.message.status,
                    MessageStatus::Completed | MessageStatus::Failed
                )
            })
    };
    let rows = wait_rows(&store, BoxKind::InboxEvents, settled).await;
    running.shutdown().await;

    let mut read = taken(&old.seen);
    read.sort_by_key(|p| p.order);
    let paid = |order, cents, currency: &str| PaidV3 {
        order,
        cents,
        currency: currency.into(),
    };
    assert_eq!(
        read,
        vec![
            paid(1, 1000, "EUR"),
            paid(2, 2000, "EUR"),
            paid(3, 3000, "USD"),
            paid(4, 4000, "USD"),
        ],
        "version 3 read 1 and 2 upcast, 3 as it is, 4 tolerantly, each once"
    );
    for row in &rows {
        let want = if order_of(row) == 5 {
            MessageStatus::Failed
        } else {
            MessageStatus::Completed
        };
        assert_eq!(row.message.status, want, "order {}", order_of(row));
        // Never rewritten: the row keeps the version and JSON it was written with.
        assert_eq!(
            u64::from(row.message.record.schema_version),
            order_of(row),
            "order {}'s row keeps its version",
            order_of(row)
        );
    }
    let first = rows.iter().find(|r| order_of(r) == 1).expect("order 1");
    assert!(
        first.message.record.payload.contains("\"amount\""),
        "the stored JSON of version 1 is untouched: {}",
        first.message.record.payload
    );
    let failed = rows.iter().find(|r| order_of(r) == 5).expect("order 5");
    let error = failed.message.last_error.clone().unwrap_or_default();
    assert!(
        error.contains("version 5") && error.contains("version 3") && error.contains("retry"),
        "the reason names both versions and what to do: {error}"
    );
    assert_eq!(failed.message.retry_count, 0, "not retried automatically");

    // The deploy: a handler that knows version 5, then the operator's retry.
    let new = Reader::<PaidV5> {
        seen: Seen::default(),
    };
    let running = Bandeja::builder(store.clone())
        .config(fast_config())
        .on_event::<PaidV5, _>("billing", new.clone())
        .build()
        .expect("build")
        .start()
        .await
        .expect("start");
    let retried = store
        .retry(&MessageFilter {
            box_kind: Some(BoxKind::InboxEvents),
            status: Some(MessageStatus::Failed),
            ..MessageFilter::default()
        })
        .await
        .expect("retry");
    assert_eq!(retried, 1);
    wait_rows(&store, BoxKind::InboxEvents, |rows| {
        rows.len() == 5
            && rows
                .iter()
                .all(|r| r.message.status == MessageStatus::Completed)
    })
    .await;
    running.shutdown().await;
    assert_eq!(
        taken(&new.seen),
        vec![PaidV5 {
            order: 5,
            cents: "50.00".into(),
            currency: "USD".into(),
        }],
        "after the deploy, version 5 was handled once"
    );
}
