//! The schema contract: validation of schema names, the migrated layout, and emission that
//! lands in the store's schema whatever the caller's `search_path`.

mod common;

use bandeja_core::store::{ClaimRequest, Inspect};
use bandeja_core::{BoxKind, Event, MessageKind, MessageRecord, Store, StoreErrorKind, TenantId};
use bandeja_postgres::PgStore;
use common::{database_url, try_fresh_store, SchemaGuard};

fn ping(n: u64) -> MessageRecord {
    let mut record = MessageRecord::from_event(&Event::new(
        "Ping",
        format!("k{n}"),
        bandeja_conformance::fixtures::Ping { n },
    ))
    .expect("valid event");
    record.tenant_id = TenantId::default_tenant();
    record
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn emission_through_any_search_path_lands_in_the_store_schema() {
    let Some((store, guard)) = try_fresh_store().await else {
        return;
    };
    let mut tx = store.begin().await.expect("begin");
    sqlx::query("SET LOCAL search_path TO pg_catalog")
        .execute(&mut *tx)
        .await
        .expect("set search_path");
    store
        .insert_outbox(&mut *tx, MessageKind::Event, &[ping(1)])
        .await
        .expect("insert with another search_path");
    store.commit(tx).await.expect("commit");
    assert_eq!(
        store.rows(BoxKind::OutboxEvents).await.expect("rows").len(),
        1
    );
    assert_eq!(store.schema(), guard.schema());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn migrations_create_the_boxes_in_the_schema_and_are_idempotent() {
    let Some((store, guard)) = try_fresh_store().await else {
        return;
    };
    store.migrate().await.expect("migrating again is a no-op");
    let tables: Vec<String> = sqlx::query_scalar(
        "SELECT table_name::text FROM information_schema.tables WHERE table_schema = $1 ORDER BY 1",
    )
    .bind(guard.schema())
    .fetch_all(store.pool())
    .await
    .expect("tables");
    assert_eq!(
        tables,
        [
            "_sqlx_migrations",
            "inbox_commands",
            "inbox_commands_archive",
            "inbox_commands_dedup",
            "inbox_events",
            "inbox_events_archive",
            "inbox_events_dedup",
            "message_attempts",
            "outbox_commands",
            "outbox_commands_archive",
            "outbox_events",
            "outbox_events_archive",
            "sagas",
            "subscription_processes",
            "subscriptions"
        ]
    );
    let partial: i64 = sqlx::query_scalar(
        // Filter to this schema first (MATERIALIZED): other tests drop their schemas
        // concurrently, and decoding their index predicates would fail.
        "WITH idx AS MATERIALIZED ( \
           SELECT i.indrelid, i.indpred FROM pg_index i \
           JOIN pg_class c ON c.oid = i.indexrelid \
           JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = $1) \
         SELECT count(*) FROM idx \
         WHERE indpred IS NOT NULL AND (pg_get_expr(indpred, indrelid) LIKE '%PENDING%' \
           OR pg_get_expr(indpred, indrelid) LIKE '%COMPLETED%')",
    )
    .bind(guard.schema())
    .fetch_one(store.pool())
    .await
    .expect("indexes");
    assert_eq!(
        partial, 12,
        "three partial indexes per box: live rows by seq and (keyed rows) by key, pending rows \
         by tenant"
    );
    let key_checks: Vec<String> = sqlx::query_scalar(
        "SELECT pg_get_expr(i.indpred, i.indrelid) FROM pg_index i \
         JOIN pg_class c ON c.oid = i.indexrelid \
         JOIN pg_namespace n ON n.oid = c.relnamespace \
         WHERE n.nspname = $1 AND c.relname LIKE '%\\_key\\_check' ORDER BY c.relname",
    )
    .bind(guard.schema())
    .fetch_all(store.pool())
    .await
    .expect("key check indexes");
    assert_eq!(key_checks.len(), 4, "one key check index per box");
    for predicate in &key_checks {
        assert!(
            predicate.contains("partition_key IS NOT NULL") && predicate.contains("COMPLETED"),
            "the key check's index must be one the claims' walk cannot take: {predicate}"
        );
    }
}

#[tokio::test]
async fn invalid_schema_is_rejected_before_connecting() {
    let err = PgStore::connect_with_schema("postgres://nobody@127.0.0.1:1/none", "Bad-Name")
        .await
        .expect_err("invalid schema");
    assert!(err.to_string().contains("invalid schema name"), "{err}");
    let pool = sqlx::PgPool::connect_lazy("postgres://nobody@127.0.0.1:1/none").expect("lazy");
    assert!(PgStore::from_pool(pool.clone(), Some("pg_toast")).is_err());
    let store = PgStore::from_pool(pool, None).expect("default schema");
    assert_eq!(
        (store.schema(), store.channel()),
        ("bandeja", "bandeja_bandeja")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unmigrated_schema_is_a_migration_error() {
    let Some((_store, guard)) = try_fresh_store().await else {
        return;
    };
    let schema = format!("{}_bare", guard.schema());
    let _bare_guard = SchemaGuard::adopt(&schema);
    let bare = PgStore::connect_with_schema(&database_url(), &schema)
        .await
        .expect("connect");
    let request = ClaimRequest {
        worker_id: "w",
        limit: 10,
        lease: std::time::Duration::from_secs(30),
        ordered: true,
        from_seq: None,
        tenant: None,
        subscribers: None,
    };
    let err = bare
        .claim(BoxKind::OutboxEvents, &request)
        .await
        .expect_err("no tables yet");
    assert_eq!(err.kind(), StoreErrorKind::Migration, "{err}");
}
