//! The catalog's queries.

use super::Product;
use crate::db::{ShopDb, Sql};
use crate::money::Money;

const SELECT_ONE: &str = "SELECT sku, name, price_cents FROM products WHERE sku = $1";
const SELECT_ALL: &str = "SELECT sku, name, price_cents FROM products ORDER BY sku";
const INSERT: &str = "INSERT INTO products (sku, name, price_cents) VALUES ($1, $2, $3)
    ON CONFLICT (sku) DO NOTHING";

type ProductRow = (String, String, i64);

fn from_row((sku, name, cents): ProductRow) -> Product {
    Product {
        sku,
        name,
        price: Money::from_cents(cents),
    }
}

/// The product with this sku, if any.
pub async fn find_product(db: &impl ShopDb, sku: &str) -> Result<Option<Product>, sqlx::Error> {
    let mut conn = db.acquire().await?;
    let row = conn.fetch_optional(SELECT_ONE, &[sku.into()]).await?;
    Ok(row.map(from_row))
}

/// Every product, by sku.
pub async fn products(db: &impl ShopDb) -> Result<Vec<Product>, sqlx::Error> {
    let mut conn = db.acquire().await?;
    let rows = conn.fetch_all(SELECT_ALL, &[]).await?;
    Ok(rows.into_iter().map(from_row).collect())
}

/// Inserts a product unless its sku exists.
pub(super) async fn insert_product_if_missing(
    conn: &mut impl Sql,
    product: &Product,
) -> Result<(), sqlx::Error> {
    let params = [
        (&product.sku).into(),
        (&product.name).into(),
        product.price.cents().into(),
    ];
    conn.execute(INSERT, &params).await
}
