//! Inventory's commands: the order saga's `reserve` step and its compensation. Part of
//! the module's public API, with stable type names and versions; their JSON Schemas are in
//! `examples/shop/schemas.json`.

use bandeja::schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Units of one product.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[schemars(crate = "bandeja::schemars")]
pub struct StockLine {
    /// The product.
    pub sku: String,
    /// Units.
    pub quantity: i64,
}

/// Reserve every line of order `order_id`: all of them, or none (a shortage is refused).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[schemars(crate = "bandeja::schemars")]
pub struct ReserveStock {
    /// The order.
    pub order_id: i64,
    /// What to take out of stock.
    pub lines: Vec<StockLine>,
}

impl bandeja::Payload for ReserveStock {
    const TYPE: &'static str = "shop.inventory.ReserveStock";
    const VERSION: u32 = 1;
}

/// Put back what the reservation of order `order_id` took (the compensation of
/// [`ReserveStock`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[schemars(crate = "bandeja::schemars")]
pub struct ReleaseStock {
    /// The order.
    pub order_id: i64,
    /// What the reservation took.
    pub lines: Vec<StockLine>,
}

impl bandeja::Payload for ReleaseStock {
    const TYPE: &'static str = "shop.inventory.ReleaseStock";
    const VERSION: u32 = 1;
}
