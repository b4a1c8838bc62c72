//! Shipping's command (the order saga's pivot) and the data it replies with. Part of the
//! module's public API, with a stable type name and version; its JSON Schema is in
//! `examples/shop/schemas.json`.

use bandeja::schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Dispatch the parcel of order `order_id` to `customer`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[schemars(crate = "bandeja::schemars")]
pub struct DispatchShipment {
    /// The order.
    pub order_id: i64,
    /// Who receives it.
    pub customer: String,
    /// Units in the parcel.
    pub units: i64,
}

impl bandeja::Payload for DispatchShipment {
    const TYPE: &'static str = "shop.shipping.DispatchShipment";
    const VERSION: u32 = 1;
}

/// What a dispatch replies to the saga.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Dispatched {
    /// The `shipments` row.
    pub shipment_id: i64,
}
