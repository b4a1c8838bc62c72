//! [`OrderConfirmed`]: the event other modules react to. Part of the order module's public
//! API, with a stable type name and version (a contract, not a Rust path). Its JSON Schema
//! is exported (`shop --export-schemas`) and checked against the committed
//! `examples/shop/schemas.json` (`tests/schemas.rs`): a breaking change needs a new
//! VERSION.

use bandeja::schemars::JsonSchema;
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use crate::money::Money;

/// Published when an order has been accepted and stored.
///
/// It carries what listeners need (lines, customer, total), not just the id: inventory
/// would otherwise have to call back into the order module, coupling the modules the
/// other way round.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[schemars(crate = "bandeja::schemars")]
pub struct OrderConfirmed {
    /// The order's id.
    pub order_id: i64,
    /// Who ordered.
    pub customer: String,
    /// What was ordered.
    pub lines: Vec<ConfirmedLine>,
    /// The order's total.
    pub total: Money,
    /// When the order was confirmed.
    pub confirmed_at: DateTime<Utc>,
}

/// One line of a confirmed order.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[schemars(crate = "bandeja::schemars")]
pub struct ConfirmedLine {
    /// The product.
    pub sku: String,
    /// The product's name when the order was placed.
    pub product_name: String,
    /// Units ordered.
    pub quantity: i64,
}

impl bandeja::Payload for OrderConfirmed {
    const TYPE: &'static str = "shop.order.OrderConfirmed";
    const VERSION: u32 = 1;
}
