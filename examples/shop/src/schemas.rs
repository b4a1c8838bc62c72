//! The JSON Schemas of the shop's payloads, for bandeja's compatibility check: the
//! registry of every payload type (and every old version still read), exported by
//! `shop --export-schemas` and compared with the committed `examples/shop/schemas.json`
//! (`tests/schemas.rs`, or `bandeja schema check` in a pipeline).

use bandeja::schema::{SchemaError, SchemaRegistry, SchemaSnapshot};

use crate::billing::{ChargePayment, RefundPayment};
use crate::inventory::{ReleaseStock, ReserveStock};
use crate::order::{OrderConfirmed, OrderConfirmedV1};
use crate::shipping::DispatchShipment;

/// Every payload type of the shop: the event and the order saga's commands. An old
/// version kept for stored rows is registered too, as its own type with the same `TYPE`
/// and its `VERSION` (`OrderConfirmedV1`).
pub fn registry() -> SchemaRegistry {
    SchemaRegistry::new()
        .register::<OrderConfirmedV1>()
        .register::<OrderConfirmed>()
        .register::<ChargePayment>()
        .register::<RefundPayment>()
        .register::<ReserveStock>()
        .register::<ReleaseStock>()
        .register::<DispatchShipment>()
}

/// The snapshot of [`registry`].
///
/// # Errors
///
/// [`SchemaError::Conflict`] when two types register one version with different schemas.
pub fn export() -> Result<SchemaSnapshot, SchemaError> {
    registry().export()
}
