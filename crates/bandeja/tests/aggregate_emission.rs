//! Emission through the caller's transaction, the way an application does it: an aggregate
//! records events (created before it has an id), the repository inserts it, hydrates the
//! events with the generated id and drains them into the outbox in the same transaction.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use bandeja::prelude::*;
use bandeja::sqlite::SqliteStore;
use bandeja::store::Inspect;
use bandeja::testing::eventually;
use bandeja::{BoxKind, StoreError, StoreErrorKind};
use bandeja_conformance::fixtures::TempDir;

#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
struct TaskCreated {
    title: String,
}

impl Payload for TaskCreated {
    const TYPE: &'static str = "tasks.TaskCreated";
}

/// The aggregate: a task that records what happened to it.
struct Task {
    id: Option<i64>,
    title: String,
    events: RecordedEvents,
}

impl Task {
    fn create(title: &str) -> Task {
        let mut task = Task {
            id: None,
            title: title.to_owned(),
            events: RecordedEvents::default(),
        };
        task.events
            .record(Event::inceptive(
                "Task",
                TaskCreated {
                    title: title.to_owned(),
                },
            ))
            .expect("serializable");
        task
    }
}

/// The persistence adapter: INSERT, hydrate, drain — one transaction, the caller's.
async fn save(
    outbox: &Outbox<SqliteStore>,
    tx: &mut sqlx::SqliteConnection,
    task: &mut Task,
) -> bandeja::Result<()> {
    let id: i64 = sqlx::query_scalar("INSERT INTO tasks (title) VALUES (?) RETURNING id")
        .bind(&task.title)
        .fetch_one(&mut *tx)
        .await
        .map_err(|e| StoreError::new(StoreErrorKind::Permanent, "insert into tasks", e))?;
    task.id = Some(id);
    let records = task.events.drain(&id.to_string())?;
    outbox.emit_records(tx, records).await
}

#[derive(Clone, Default)]
struct Seen(Arc<Mutex<Vec<(String, String)>>>);

impl EventHandler<SqliteStore, TaskCreated> for Seen {
    async fn handle(
        &self,
        _ctx: &mut HandlerContext<'_, SqliteStore>,
        event: Event<TaskCreated>,
    ) -> Result<(), HandlerError> {
        self.0
            .lock()
            .expect("lock")
            .push((event.aggregate_id.unwrap_or_default(), event.payload.title));
        Ok(())
    }
}

#[tokio::test]
async fn commit_delivers_and_rollback_leaves_nothing() {
    let dir = TempDir::new("bandeja-agg");
    let store = SqliteStore::connect(&dir.sqlite_url("app.db"))
        .await
        .expect("open");
    store.migrate().await.expect("migrate");
    sqlx::query("CREATE TABLE tasks (id INTEGER PRIMARY KEY AUTOINCREMENT, title TEXT NOT NULL)")
        .execute(store.pool())
        .await
        .expect("table");

    let mut config = Config::default();
    for group in bandeja::BoxKind::ALL {
        config.group_mut(group).polling_initial_delay = Duration::ZERO;
        config.group_mut(group).polling_interval = Duration::from_millis(100);
    }
    let seen = Seen::default();
    let bandeja = Bandeja::builder(store.clone())
        .config(config)
        .on_event("audit", seen.clone())
        .build()
        .expect("build");
    let running = bandeja.start().await.expect("start");

    // Rolled back: neither the task nor its event exist, and nothing is ever delivered.
    let mut tx = store.pool().begin().await.expect("begin");
    let mut ghost = Task::create("ghost");
    save(&bandeja.outbox(), &mut tx, &mut ghost)
        .await
        .expect("save");
    tx.rollback().await.expect("rollback");

    // Committed: the event is in the outbox with the generated aggregate id, and delivered.
    let mut tx = store.pool().begin().await.expect("begin");
    let mut real = Task::create("write the docs");
    save(&bandeja.outbox(), &mut tx, &mut real)
        .await
        .expect("save");
    assert!(real.events.is_empty(), "drained");
    tx.commit().await.expect("commit");

    let id = real.id.expect("id").to_string();
    eventually(Duration::from_secs(10), || async {
        (!seen.0.lock().expect("lock").is_empty()).then_some(())
    })
    .await
    .expect("delivered");
    running.shutdown().await;

    assert_eq!(
        *seen.0.lock().expect("lock"),
        vec![(id.clone(), "write the docs".to_owned())]
    );
    let outbox = store.rows(BoxKind::OutboxEvents).await.expect("rows");
    assert_eq!(
        outbox.len(),
        1,
        "the rolled-back event never reached the outbox"
    );
    assert_eq!(
        outbox[0].message.record.aggregate_id.as_deref(),
        Some(id.as_str())
    );
    assert_eq!(
        outbox[0].message.record.partition_key.as_deref(),
        Some(id.as_str())
    );
    assert_eq!(outbox[0].message.status, MessageStatus::Completed);
    let tasks: i64 = sqlx::query_scalar("SELECT count(*) FROM tasks")
        .fetch_one(store.pool())
        .await
        .expect("count");
    assert_eq!(tasks, 1);
}
