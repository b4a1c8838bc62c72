//! The `Admin` conformance suite on PostgreSQL: each test gets its own schema (see
//! `common`); the archive tables are read back with SQL of their own.

mod common;

use std::time::Duration;

use bandeja_conformance::admin::ArchivedRow;
use bandeja_conformance::fixtures::{take_over, Ping};
use bandeja_core::admin::Admin;
use bandeja_core::store::{Outcome, Resolution};
use bandeja_core::{BoxKind, Event, MessageId, MessageKind, MessageRecord, Store, TenantId};
use bandeja_postgres::PgStore;
use chrono::{DateTime, Utc};
use common::fresh_store;
use sqlx::{PgConnection, Row};

/// The rows of `<box>_archive`, oldest archived first; every one has `archived_at`.
async fn archived(store: PgStore, box_kind: BoxKind) -> Vec<ArchivedRow> {
    let subscriber = if box_kind.is_inbox() {
        "subscriber"
    } else {
        "NULL::text AS subscriber"
    };
    let sql = format!(
        "SELECT id, {subscriber}, status, archived_at FROM \"{}\".{} ORDER BY archived_at, seq",
        store.schema(),
        bandeja_core::admin::archive_table(box_kind)
    );
    let rows = sqlx::query(&sql)
        .fetch_all(store.pool())
        .await
        .expect("read the archive");
    rows.iter()
        .map(|row| {
            let id: uuid::Uuid = row.get("id");
            let status: String = row.get("status");
            let archived_at: DateTime<Utc> = row.get("archived_at");
            assert!(archived_at <= Utc::now());
            (
                MessageId(id),
                row.get("subscriber"),
                status.parse().expect("status"),
            )
        })
        .collect()
}

bandeja_conformance::admin_conformance_tests!(fresh_store, archived);

/// Rows written through the store into the events outbox: `n` Ping events.
async fn emit(store: &PgStore, n: u64) -> Vec<MessageRecord> {
    let records: Vec<MessageRecord> = (0..n)
        .map(|n| {
            let mut record =
                MessageRecord::from_event(&Event::new("Ping", format!("k{n}"), Ping { n }))
                    .expect("a valid event");
            record.tenant_id = TenantId::default_tenant();
            record
        })
        .collect();
    let mut tx = store.begin().await.expect("begin");
    store
        .insert_outbox(&mut *tx, MessageKind::Event, &records)
        .await
        .expect("insert");
    store.commit(tx).await.expect("commit");
    records
}

/// Sequential scans and index scans of the events outbox so far, as the statistics hold
/// them once this connection's pending counts are flushed (`pg_stat_force_next_flush`:
/// flushed when the statement ends, before the next one reads them).
async fn scans(conn: &mut PgConnection, schema: &str) -> (i64, i64) {
    sqlx::query("SELECT pg_stat_force_next_flush()")
        .execute(&mut *conn)
        .await
        .expect("flush the statistics");
    let row = sqlx::query(
        "SELECT seq_scan, COALESCE(idx_scan, 0) AS idx_scan FROM pg_stat_user_tables \
         WHERE schemaname = $1 AND relname = 'outbox_events'",
    )
    .bind(schema)
    .fetch_one(&mut *conn)
    .await
    .expect("read the statistics");
    (row.get("seq_scan"), row.get("idx_scan"))
}

/// The counters (the taken-over count included) read the live and FAILED rows through their
/// partial indexes, never the COMPLETED history: with 20 000 analyzed COMPLETED rows (each
/// taken over once; completed over the last four weeks, two minutes apart) in the events
/// outbox, a `counters` call scans the table sequentially zero times, and the history
/// counts nowhere.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn counters_never_scan_the_completed_history() {
    let (seeding, guard) = fresh_store().await;
    let records = emit(&seeding, 2).await;
    let taken = take_over(&seeding, &records).await;
    let failed = Outcome {
        id: taken[0].record.id,
        subscriber: None,
        resolution: Resolution::Failed {
            retry_count: 0,
            error: "no route".into(),
        },
    };
    seeding
        .resolve(BoxKind::OutboxEvents, "alive", &[failed])
        .await
        .expect("resolve");
    // Everything the seeding connections did is flushed when they end.
    seeding.pool().close().await;

    // One connection: every scan of the table from here on is this connection's.
    let pool = sqlx::postgres::PgPoolOptions::new()
        .max_connections(1)
        .connect(&common::database_url())
        .await
        .expect("connect");
    let store = PgStore::from_pool(pool.clone(), Some(guard.schema())).expect("store");
    let mut conn = pool.acquire().await.expect("a connection");
    let schema = guard.schema();
    sqlx::query(&format!(
        "INSERT INTO \"{schema}\".outbox_events (id, tenant_id, message_type, schema_version, \
           payload, status, next_attempt_at, occurred_at, created_at, last_modified_at, \
           completed_at, takeover_count) \
         SELECT gen_random_uuid(), 'default', 'history.Done', 1, '{{}}'::jsonb, 'COMPLETED', \
           at, at, at, at, at, 1 \
         FROM generate_series(20000, 1, -1) AS g, LATERAL (SELECT now() - g * interval '2 minutes' AS at) AS t"
    ))
    .execute(&mut *conn)
    .await
    .expect("write the history");
    sqlx::query(&format!("ANALYZE \"{schema}\".outbox_events"))
        .execute(&mut *conn)
        .await
        .expect("analyze");
    let before = scans(&mut conn, schema).await;
    drop(conn);

    let counters = store
        .counters(Duration::from_secs(3600), false)
        .await
        .expect("counters");
    let by_tenant = store
        .counters(Duration::from_secs(3600), true)
        .await
        .expect("counters by tenant");

    let mut conn = pool.acquire().await.expect("a connection");
    let after = scans(&mut conn, schema).await;
    assert_eq!(
        after.0, before.0,
        "no sequential scan of the events outbox (index scans {} -> {})",
        before.1, after.1
    );
    assert!(after.1 > before.1, "the counters went through the indexes");
    let outbox = &counters[0];
    assert_eq!(
        (outbox.pending, outbox.processing, outbox.failed),
        (0, 1, 1)
    );
    assert_eq!(
        outbox.taken_over, 2,
        "the held and the FAILED row, not the history"
    );
    assert!(outbox.last_processed_at.is_some());
    assert_eq!(by_tenant.len(), 1, "{by_tenant:?}");
    assert_eq!(by_tenant[0].taken_over, 2);
}
