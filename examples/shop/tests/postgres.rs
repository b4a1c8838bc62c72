//! The happy path on PostgreSQL: a fresh database per run, the shop binary against it,
//! an order → charged, stock reserved, shipped (its saga COMPLETED), email recorded; and a
//! shortage → the charge refunded (COMPENSATED). Without a reachable server the test prints a
//! notice and passes, except under `CI=true`, where it fails saying how to start one.
#![cfg(feature = "postgres")]

mod common;

use std::time::Duration;

use sqlx::postgres::{PgConnection, PgPool};
use sqlx::Connection;

use common::{order_id, place_order, stock, wait_for, wait_for_status, Shop, TempDir};

/// Where the test creates its database (override with `SHOP_TEST_POSTGRES_URL`).
const ADMIN_URL: &str = "postgres://postgres@127.0.0.1:5432/postgres";
const WAIT: Duration = Duration::from_secs(20);

/// A database created for this test, dropped (`WITH (FORCE)`) when the guard goes.
struct TestDatabase {
    admin_url: String,
    name: String,
    url: String,
}

impl TestDatabase {
    async fn create(admin: &mut PgConnection, admin_url: &str) -> TestDatabase {
        let name = format!("shop_{}", uuid::Uuid::new_v4().simple());
        sqlx::query(&format!("CREATE DATABASE {name}"))
            .execute(&mut *admin)
            .await
            .expect("CREATE DATABASE");
        let base = admin_url
            .rsplit_once('/')
            .map_or(admin_url, |(base, _)| base);
        TestDatabase {
            admin_url: admin_url.to_owned(),
            url: format!("{base}/{name}"),
            name,
        }
    }
}

impl Drop for TestDatabase {
    fn drop(&mut self) {
        let (admin_url, name) = (self.admin_url.clone(), self.name.clone());
        // Drop cannot await: run the DROP on a runtime of its own.
        let dropped = std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()?;
            runtime.block_on(async {
                let mut admin = PgConnection::connect(&admin_url).await?;
                sqlx::query(&format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)"))
                    .execute(&mut admin)
                    .await?;
                admin.close().await?;
                Ok::<_, Box<dyn std::error::Error + Send + Sync>>(())
            })
        })
        .join();
        if !matches!(dropped, Ok(Ok(()))) {
            eprintln!("could not drop the test database {}", self.name);
        }
    }
}

/// A connection to the admin database, or `None` (after a notice) when PostgreSQL is
/// unreachable outside CI.
async fn admin_connection(url: &str) -> Option<PgConnection> {
    let connected = tokio::time::timeout(Duration::from_secs(5), PgConnection::connect(url))
        .await
        .map_err(|_| "no answer within 5 s".to_owned())
        .and_then(|result| result.map_err(|e| e.to_string()));
    match connected {
        Ok(connection) => Some(connection),
        Err(e) => {
            let help = format!(
                "PostgreSQL is not reachable at {url} ({e}). Start it with \
                 `service postgresql start` (or `pg_ctlcluster 15 main start`), with trust \
                 authentication for the `postgres` user on 127.0.0.1, or point \
                 SHOP_TEST_POSTGRES_URL at a server where that user may CREATE DATABASE."
            );
            if std::env::var("CI").is_ok_and(|v| v == "true") {
                panic!("{help}");
            }
            eprintln!("skipping the PostgreSQL test: {help}");
            None
        }
    }
}

#[tokio::test]
async fn the_shop_runs_on_postgresql() {
    let admin_url = std::env::var("SHOP_TEST_POSTGRES_URL").unwrap_or_else(|_| ADMIN_URL.into());
    let Some(mut admin) = admin_connection(&admin_url).await else {
        return;
    };
    let database = TestDatabase::create(&mut admin, &admin_url).await;
    let _ = admin.close().await;
    let dir = TempDir::new("postgres");
    let shop = Shop::start(&database.url, &[], &dir.path().join("shop.log"));
    let client = reqwest::Client::new();
    let db = PgPool::connect(&database.url)
        .await
        .expect("connect to the test database");

    let before = stock(&client, &shop, "MS-001").await;
    let order = place_order(&client, &shop, "carol", &[("MS-001", 2)]).await;
    let id = order_id(&order);
    assert_eq!(order["total"], "59.80");
    let fetched = client
        .get(shop.url(&format!("/orders/{id}")))
        .send()
        .await
        .expect("GET /orders/{id}");
    assert_eq!(fetched.status(), 200);

    let after = wait_for("the stock of MS-001 to go down", WAIT, || async {
        let now = stock(&client, &shop, "MS-001").await;
        (now != before).then_some(now)
    })
    .await;
    assert_eq!(after, before - 2);
    let subject: String = wait_for("the confirmation email", WAIT, || async {
        sqlx::query_scalar("SELECT subject FROM sent_emails WHERE order_id = $1")
            .bind(id)
            .fetch_optional(&db)
            .await
            .expect("read sent_emails")
    })
    .await;
    assert_eq!(subject, format!("Order #{id} confirmed"));
    wait_for_status(&client, &shop, id, "COMPLETED", WAIT).await;
    let status: String = wait_for("the notification row COMPLETED", WAIT, || async {
        sqlx::query_scalar(
            "SELECT status FROM bandeja.inbox_events WHERE aggregate_id = $1 AND subscriber = 'notification'",
        )
        .bind(id.to_string())
        .fetch_optional(&db)
        .await
        .expect("read bandeja.inbox_events")
        .filter(|status: &String| status == "COMPLETED")
    })
    .await;
    assert_eq!(status, "COMPLETED");
    let count = |table: &'static str, order: i64| {
        let db = db.clone();
        async move {
            sqlx::query_scalar::<_, i64>(&format!(
                "SELECT count(*) FROM {table} WHERE order_id = $1"
            ))
            .bind(order)
            .fetch_one(&db)
            .await
            .expect("count rows")
        }
    };
    for table in ["charges", "stock_movements", "shipments"] {
        assert_eq!(count(table, id).await, 1, "{table}");
    }

    let short = order_id(&place_order(&client, &shop, "dave", &[("HD-001", 1)]).await);
    let ended = wait_for_status(&client, &shop, short, "COMPENSATED", WAIT).await;
    assert!(
        ended["reason"]
            .as_str()
            .unwrap_or_default()
            .contains("HD-001"),
        "{ended}"
    );
    assert_eq!(count("charges", short).await, 1);
    assert_eq!(count("refunds", short).await, 1);
    assert_eq!(count("stock_movements", short).await, 0);
    assert_eq!(count("shipments", short).await, 0);

    db.close().await;
    drop(shop); // the child exits before the database is dropped
}
