//! The databases the CLI tests run the binary on: migrated by `bandeja migrate`, then
//! filled through the store API (e.g. by [`seed`](super::seed)) before the binary reads
//! them. A SQLite file in a temporary folder, or a PostgreSQL schema of its own.

use bandeja_conformance::fixtures::TempDir;
use bandeja_postgres::testing::{database_url, fresh_schema, SchemaGuard};
use bandeja_postgres::PgStore;
use bandeja_sqlite::SqliteStore;

use super::{bandeja, runtime};

/// A SQLite file that lives as long as this value.
pub(crate) struct SqliteDatabase {
    _dir: TempDir,
    /// Its `sqlite://…` URL.
    pub(crate) url: String,
}

impl SqliteDatabase {
    /// The options that point the binary at it: `--database <url>`.
    pub(crate) fn args(&self) -> [&str; 2] {
        ["--database", &self.url]
    }
}

/// A fresh SQLite file, migrated by `bandeja migrate`, after `fill` ran on it (its store
/// is closed before this returns); with what `fill` returned.
pub(crate) fn sqlite_filled<T>(fill: impl AsyncFnOnce(&SqliteStore) -> T) -> (SqliteDatabase, T) {
    let dir = TempDir::new("bandeja-cli");
    let url = dir.sqlite_url("boxes.db");
    let run = bandeja(&["migrate", "--database", &url]).expect_code(0);
    assert!(run.stdout.contains("migrations applied"), "{run:#?}");
    let filled = runtime().block_on(async {
        let store = SqliteStore::connect(&url).await.expect("open");
        let filled = fill(&store).await;
        store.pool().close().await;
        filled
    });
    (SqliteDatabase { _dir: dir, url }, filled)
}

/// A schema of its own in the tests' PostgreSQL database, dropped with this value.
pub(crate) struct PgDatabase {
    schema: SchemaGuard,
    /// The tests' database URL.
    pub(crate) url: String,
}

impl PgDatabase {
    /// The options that point the binary at it: `--database <url> --schema <schema>`.
    pub(crate) fn args(&self) -> [&str; 4] {
        ["--database", &self.url, "--schema", self.schema.schema()]
    }
}

/// A fresh schema, migrated by `bandeja migrate`, after `fill` ran on it (its store is
/// closed before this returns); with what `fill` returned. `None` (after a notice) when
/// PostgreSQL is unreachable outside CI; panics in CI.
pub(crate) fn postgres_filled<T>(fill: impl AsyncFnOnce(&PgStore) -> T) -> Option<(PgDatabase, T)> {
    let schema = runtime().block_on(fresh_schema("bandeja_cli"))?;
    let database = PgDatabase {
        schema,
        url: database_url(),
    };
    let run = bandeja(&[&["migrate"][..], &database.args()].concat()).expect_code(0);
    assert!(run.stdout.contains("migrations applied"), "{run:#?}");
    let filled = runtime().block_on(async {
        let store = PgStore::connect_with_schema(&database.url, database.schema.schema())
            .await
            .expect("connect");
        let filled = fill(&store).await;
        store.pool().close().await;
        filled
    });
    Some((database, filled))
}
