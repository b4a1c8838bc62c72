//! The catalog's queries, for both stores.

use async_trait::async_trait;

use super::Product;
use crate::db::{for_each_store, Backend};
use crate::money::Money;

/// The queries of the catalog module.
#[async_trait]
pub trait CatalogRepository: Backend {
    /// The product with this sku, if any.
    async fn product(&self, sku: &str) -> Result<Option<Product>, sqlx::Error>;

    /// Every product, by sku.
    async fn products(&self) -> Result<Vec<Product>, sqlx::Error>;

    /// Inserts a product unless its sku exists.
    async fn insert_product_if_missing(
        conn: &mut Self::Conn,
        product: &Product,
    ) -> Result<(), sqlx::Error>;
}

const SELECT_ONE: &str = "SELECT sku, name, price_cents FROM products WHERE sku = $1";
const SELECT_ALL: &str = "SELECT sku, name, price_cents FROM products ORDER BY sku";
const INSERT: &str = "INSERT INTO products (sku, name, price_cents) VALUES ($1, $2, $3)
    ON CONFLICT (sku) DO NOTHING";

fn product((sku, name, cents): (String, String, i64)) -> Product {
    Product {
        sku,
        name,
        price: Money::from_cents(cents),
    }
}

macro_rules! implement {
    ($store:ty) => {
        #[async_trait]
        impl CatalogRepository for $store {
            async fn product(&self, sku: &str) -> Result<Option<Product>, sqlx::Error> {
                let row = sqlx::query_as(SELECT_ONE)
                    .bind(sku)
                    .fetch_optional(self.pool())
                    .await?;
                Ok(row.map(product))
            }

            async fn products(&self) -> Result<Vec<Product>, sqlx::Error> {
                let rows = sqlx::query_as(SELECT_ALL).fetch_all(self.pool()).await?;
                Ok(rows.into_iter().map(product).collect())
            }

            async fn insert_product_if_missing(
                conn: &mut Self::Conn,
                product: &Product,
            ) -> Result<(), sqlx::Error> {
                sqlx::query(INSERT)
                    .bind(&product.sku)
                    .bind(&product.name)
                    .bind(product.price.cents())
                    .execute(conn)
                    .await
                    .map(drop)
            }
        }
    };
}

for_each_store!(implement);
