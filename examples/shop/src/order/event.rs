//! [`OrderConfirmed`]: the event other modules react to. Part of the order module's public
//! API, with a stable type name and version (a contract, not a Rust path). Its JSON Schema
//! is exported (`shop --export-schemas`) and checked against the committed
//! `examples/shop/schemas.json` (`tests/schemas.rs`): a breaking change needs a new
//! VERSION.
//!
//! Version 2 added `currency` (required: a consumer must know what the amounts are in).
//! Rows written at version 1 — in the outbox, the inboxes, a broker's stream — stay as they
//! were; a handler reads them through the upcaster [`v1_to_v2`], which fills in `EUR`, what
//! every amount was before. [`OrderConfirmedV1`] keeps the first shape registered, so the
//! compatibility check compares the two versions.

use bandeja::schemars::JsonSchema;
use bandeja::{UpcastError, Upcaster};
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
    /// The ISO 4217 code of `total`'s currency (since version 2).
    pub currency: String,
    /// When the order was confirmed.
    pub confirmed_at: DateTime<Utc>,
}

/// The currency of every amount before version 2 said so.
pub const VERSION_1_CURRENCY: &str = "EUR";

/// `OrderConfirmed` as version 1 wrote it (no `currency`): kept so the compatibility check
/// compares both versions, and so a test (or an old producer) can still write a row of it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[schemars(crate = "bandeja::schemars")]
pub struct OrderConfirmedV1 {
    /// The order's id.
    pub order_id: i64,
    /// Who ordered.
    pub customer: String,
    /// What was ordered.
    pub lines: Vec<ConfirmedLine>,
    /// The order's total, in euros.
    pub total: Money,
    /// When the order was confirmed.
    pub confirmed_at: DateTime<Utc>,
}

impl bandeja::Payload for OrderConfirmedV1 {
    const TYPE: &'static str = "shop.order.OrderConfirmed";
    const VERSION: u32 = 1;
}

/// Version 1 → 2: the amounts of a version 1 event were in euros.
///
/// # Errors
///
/// When the stored JSON is not an object (no version of the event wrote one).
pub fn v1_to_v2(mut v1: serde_json::Value) -> Result<serde_json::Value, UpcastError> {
    let object = v1
        .as_object_mut()
        .ok_or_else(|| UpcastError::new("a version 1 OrderConfirmed is a JSON object"))?;
    object
        .entry("currency")
        .or_insert_with(|| VERSION_1_CURRENCY.into());
    Ok(v1)
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
    const VERSION: u32 = 2;
    const UPCASTERS: &'static [Upcaster] = &[Upcaster::new(1, v1_to_v2)];
}
