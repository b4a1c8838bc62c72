//! Billing's commands (the order saga's `charge` step and its compensation) and the data
//! a charge replies with. Part of the module's public API, with stable type names and
//! versions; their JSON Schemas are in `examples/shop/schemas.json`.

use bandeja::schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::money::Money;

/// Charge `amount` for order `order_id` to `customer`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[schemars(crate = "bandeja::schemars")]
pub struct ChargePayment {
    /// The order.
    pub order_id: i64,
    /// Who pays.
    pub customer: String,
    /// How much.
    pub amount: Money,
}

impl bandeja::Payload for ChargePayment {
    const TYPE: &'static str = "shop.billing.ChargePayment";
    const VERSION: u32 = 1;
}

/// Refund the charge of order `order_id` (the compensation of [`ChargePayment`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[schemars(crate = "bandeja::schemars")]
pub struct RefundPayment {
    /// The order.
    pub order_id: i64,
    /// The charge to refund, as the charge's reply named it (`None`: its reply never came;
    /// billing finds the saga's charge, if there is one).
    pub charge_id: Option<i64>,
}

impl bandeja::Payload for RefundPayment {
    const TYPE: &'static str = "shop.billing.RefundPayment";
    const VERSION: u32 = 1;
}

/// What a done charge replies to the saga (kept in its data for the refund).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Charged {
    /// The `charges` row.
    pub charge_id: i64,
}
