//! The order saga: `charge` (billing; compensated by a refund) → `reserve` (inventory;
//! compensated by a release) → `ship` (shipping; the **pivot**). Placing an order starts
//! one in the transaction that stores the order ([`super::place_order`]); the process that
//! runs the order module orchestrates it (its replies, its timeouts).
//!
//! A shortage at `reserve` is a refusal: the saga refunds the charge (a refund row beside
//! the charge row) and ends COMPENSATED. Each step's service is idempotent on the step's
//! key ([`crate::steps`]).

use bandeja::sagas::Saga;
use bandeja::{BuildError, Command};
use serde::{Deserialize, Serialize};

use crate::billing::{ChargePayment, Charged, RefundPayment};
use crate::inventory::{ReleaseStock, ReserveStock, StockLine};
use crate::messaging::Service;
use crate::money::Money;
use crate::shipping::{DispatchShipment, Dispatched};

/// The saga's name (stored with each saga: keep it stable).
pub const SAGA: &str = "order";
/// The first step: where a new order's saga is.
pub const FIRST_STEP: &str = "charge";

/// The saga's data: what the steps' commands are built from, and what their replies left.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct OrderSaga {
    /// The order.
    pub order_id: i64,
    /// Who ordered.
    pub customer: String,
    /// What to charge.
    pub total: Money,
    /// What to reserve and ship.
    pub lines: Vec<StockLine>,
    /// The charge, once billing replied (the refund names it).
    #[serde(default)]
    pub charge_id: Option<i64>,
    /// The shipment, once shipping replied.
    #[serde(default)]
    pub shipment_id: Option<i64>,
}

impl OrderSaga {
    fn units(&self) -> i64 {
        self.lines.iter().map(|l| l.quantity).sum()
    }
}

/// The definition (each process builds it once at start; `build` checks it).
pub fn order_saga() -> Result<Saga<OrderSaga>, BuildError> {
    let billing = Service::Billing.name();
    let inventory = Service::Inventory.name();
    let shipping = Service::Shipping.name();
    Saga::<OrderSaga>::define(SAGA)
        .step(FIRST_STEP, move |o: &OrderSaga| {
            let charge = ChargePayment {
                order_id: o.order_id,
                customer: o.customer.clone(),
                amount: o.total,
            };
            Command::to_self(billing, charge)
        })
        .compensate_with(move |o: &OrderSaga| {
            let refund = RefundPayment {
                order_id: o.order_id,
                charge_id: o.charge_id,
            };
            Command::to_self(billing, refund)
        })
        .on_success(|o: &mut OrderSaga, reply| {
            o.charge_id = Charged::deserialize(reply).ok().map(|c| c.charge_id);
        })
        .step("reserve", move |o: &OrderSaga| {
            let reserve = ReserveStock {
                order_id: o.order_id,
                lines: o.lines.clone(),
            };
            Command::to_self(inventory, reserve)
        })
        .compensate_with(move |o: &OrderSaga| {
            let release = ReleaseStock {
                order_id: o.order_id,
                lines: o.lines.clone(),
            };
            Command::to_self(inventory, release)
        })
        .step("ship", move |o: &OrderSaga| {
            let parcel = DispatchShipment {
                order_id: o.order_id,
                customer: o.customer.clone(),
                units: o.units(),
            };
            Command::to_self(shipping, parcel)
        })
        .pivot()
        .on_success(|o: &mut OrderSaga, reply| {
            o.shipment_id = Dispatched::deserialize(reply).ok().map(|d| d.shipment_id);
        })
        .build()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_order_saga_is_a_valid_definition() {
        let saga = order_saga().expect("valid");
        assert_eq!(saga.name(), SAGA);
    }
}
