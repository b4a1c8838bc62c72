//! The shop's SQL on SQLite: [`Sql`] for `SqliteConnection`, [`ShopDb`] for `SqliteStore`.

use bandeja::sqlite::SqliteStore;
use sqlx::pool::PoolConnection;
use sqlx::sqlite::{SqliteArguments, SqliteConnection};
use sqlx::{Arguments, Sqlite};

use super::{Dialect, Row, ShopDb, Sql, Value};

impl Sql for SqliteConnection {
    async fn execute(&mut self, sql: &str, params: &[Value<'_>]) -> Result<(), sqlx::Error> {
        let arguments = arguments(params)?;
        sqlx::query_with(sql, arguments)
            .execute(self)
            .await
            .map(drop)
    }

    async fn fetch_optional<R: Row>(
        &mut self,
        sql: &str,
        params: &[Value<'_>],
    ) -> Result<Option<R>, sqlx::Error> {
        let arguments = arguments(params)?;
        sqlx::query_as_with(sql, arguments)
            .fetch_optional(self)
            .await
    }

    async fn fetch_all<R: Row>(
        &mut self,
        sql: &str,
        params: &[Value<'_>],
    ) -> Result<Vec<R>, sqlx::Error> {
        let arguments = arguments(params)?;
        sqlx::query_as_with(sql, arguments).fetch_all(self).await
    }
}

/// The values bound to `$1`, `$2`, … in order.
fn arguments<'q>(params: &[Value<'q>]) -> Result<SqliteArguments<'q>, sqlx::Error> {
    let mut arguments = SqliteArguments::default();
    for value in params {
        match *value {
            Value::Int(n) => arguments.add(n),
            Value::Text(text) => arguments.add(text),
            Value::Time(time) => arguments.add(time),
        }
        .map_err(sqlx::Error::Encode)?;
    }
    Ok(arguments)
}

impl ShopDb for SqliteStore {
    const DIALECT: Dialect = Dialect::Sqlite;
    type Pooled = PoolConnection<Sqlite>;

    async fn acquire(&self) -> Result<Self::Pooled, sqlx::Error> {
        self.pool().acquire().await
    }

    async fn begin_write(&self) -> Result<Self::Tx, sqlx::Error> {
        self.pool().begin_with("BEGIN IMMEDIATE").await
    }

    async fn commit_write(tx: Self::Tx) -> Result<(), sqlx::Error> {
        tx.commit().await
    }
}
