//! The shop's SQL on PostgreSQL (the `postgres` feature, on by default): [`Sql`] for
//! `PgConnection`, [`ShopDb`] for `PgStore`.

use bandeja::postgres::PgStore;
use sqlx::pool::PoolConnection;
use sqlx::postgres::{PgArguments, PgConnection};
use sqlx::{Arguments, Postgres};

use super::{Dialect, Row, ShopDb, Sql, Value};

impl Sql for PgConnection {
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
fn arguments(params: &[Value<'_>]) -> Result<PgArguments, sqlx::Error> {
    let mut arguments = PgArguments::default();
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

impl ShopDb for PgStore {
    const DIALECT: Dialect = Dialect::Postgres;
    type Pooled = PoolConnection<Postgres>;

    async fn acquire(&self) -> Result<Self::Pooled, sqlx::Error> {
        self.pool().acquire().await
    }

    async fn begin_write(&self) -> Result<Self::Tx, sqlx::Error> {
        self.pool().begin().await
    }

    async fn commit_write(tx: Self::Tx) -> Result<(), sqlx::Error> {
        tx.commit().await
    }
}
