//! The order aggregate: its lines, its total and the event it records.

use chrono::{DateTime, Utc};
use serde::Serialize;

use bandeja::{MessageRecord, RecordedEvents};

use super::command::{validate_customer, validate_lines, OrderError};
use super::event::{ConfirmedLine, OrderConfirmed};
use super::saga::OrderSaga;
use crate::inventory::StockLine;
use crate::money::Money;

/// Where an order is in its life. The `orders` row keeps `CONFIRMED` (accepted and
/// stored); the other statuses are its saga's ([`super::Progress`]), shown by the API.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum OrderStatus {
    /// Accepted and stored; the other modules are told by [`OrderConfirmed`]. What the API
    /// shows for an order stored before the shop had sagas.
    Confirmed,
    /// Its saga goes forward: charge, reserve, ship.
    Processing,
    /// A step was refused (a shortage) or timed out: the steps done are being undone.
    Compensating,
    /// Charged, reserved and shipped.
    Completed,
    /// A step failed and what was done is undone (the charge refunded, both recorded).
    Compensated,
    /// Needs an operator (a compensation kept failing, a step after the pivot too).
    Failed,
}

impl OrderStatus {
    /// The text stored in the `status` column.
    pub fn as_str(self) -> &'static str {
        match self {
            OrderStatus::Confirmed => "CONFIRMED",
            OrderStatus::Processing => "PROCESSING",
            OrderStatus::Compensating => "COMPENSATING",
            OrderStatus::Completed => "COMPLETED",
            OrderStatus::Compensated => "COMPENSATED",
            OrderStatus::Failed => "FAILED",
        }
    }
}

/// One line of an order: the product as it was when ordered.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct OrderLine {
    /// The product.
    pub sku: String,
    /// Its name.
    pub product_name: String,
    /// Units.
    pub quantity: i64,
    /// Price of one unit.
    pub unit_price: Money,
}

/// The order aggregate. It records its events ([`RecordedEvents`]); placing the order drains
/// them into the outbox inside the transaction that saves the order.
#[derive(Debug, Clone)]
pub struct Order {
    id: Option<i64>,
    customer: String,
    status: OrderStatus,
    lines: Vec<OrderLine>,
    total: Money,
    confirmed_at: DateTime<Utc>,
    events: RecordedEvents,
}

impl Order {
    /// A new confirmed order, not stored yet (no id).
    pub fn confirm(
        customer: &str,
        lines: Vec<OrderLine>,
        now: DateTime<Utc>,
    ) -> Result<Order, OrderError> {
        validate_customer(customer)?;
        validate_lines(lines.iter().map(|l| (l.sku.as_str(), l.quantity)))?;
        let total = lines.iter().try_fold(Money::ZERO, |sum, line| {
            line.unit_price
                .checked_mul(line.quantity)
                .and_then(|amount| sum.checked_add(amount))
                .ok_or(OrderError::TotalTooLarge)
        })?;
        let mut order = Order {
            id: None,
            customer: customer.to_owned(),
            status: OrderStatus::Confirmed,
            lines,
            total,
            confirmed_at: now,
            events: RecordedEvents::default(),
        };
        // The fact happens now; its payload carries the order id, which the INSERT will
        // generate: the drain hands it to this closure (the seed's inceptive event).
        let snapshot = order.clone();
        order.events.record_with(super::AGGREGATE_TYPE, move |id| {
            snapshot.confirmed_event(id.parse().unwrap_or_default())
        });
        Ok(order)
    }

    /// An order read back from the database.
    pub(crate) fn restore(
        id: i64,
        customer: String,
        lines: Vec<OrderLine>,
        total: Money,
        confirmed_at: DateTime<Utc>,
    ) -> Order {
        Order {
            id: Some(id),
            customer,
            status: OrderStatus::Confirmed,
            lines,
            total,
            confirmed_at,
            events: RecordedEvents::default(),
        }
    }

    /// Called by the place-order use case once the `INSERT` gave the order its id.
    pub(crate) fn stored_as(&mut self, id: i64) {
        self.id = Some(id);
    }

    /// Takes the recorded events, hydrated with the order id, for the outbox.
    pub(crate) fn drain_events(&mut self, id: i64) -> bandeja::Result<Vec<MessageRecord>> {
        self.events.drain(&id.to_string())
    }

    fn confirmed_event(&self, id: i64) -> OrderConfirmed {
        OrderConfirmed {
            order_id: id,
            customer: self.customer.clone(),
            lines: self
                .lines
                .iter()
                .map(|l| ConfirmedLine {
                    sku: l.sku.clone(),
                    product_name: l.product_name.clone(),
                    quantity: l.quantity,
                })
                .collect(),
            total: self.total,
            currency: super::event::VERSION_1_CURRENCY.to_owned(),
            confirmed_at: self.confirmed_at,
        }
    }

    /// The data of the order's saga (charge, reserve, ship).
    pub(crate) fn saga_data(&self, id: i64) -> OrderSaga {
        OrderSaga {
            order_id: id,
            customer: self.customer.clone(),
            total: self.total,
            lines: self
                .lines
                .iter()
                .map(|l| StockLine {
                    sku: l.sku.clone(),
                    quantity: l.quantity,
                })
                .collect(),
            charge_id: None,
            shipment_id: None,
        }
    }

    /// The id, once stored.
    pub fn id(&self) -> Option<i64> {
        self.id
    }
    /// The customer.
    pub fn customer(&self) -> &str {
        &self.customer
    }
    /// The status.
    pub fn status(&self) -> OrderStatus {
        self.status
    }
    /// The lines.
    pub fn lines(&self) -> &[OrderLine] {
        &self.lines
    }
    /// The total.
    pub fn total(&self) -> Money {
        self.total
    }
    /// When it was confirmed.
    pub fn confirmed_at(&self) -> DateTime<Utc> {
        self.confirmed_at
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(sku: &str, quantity: i64, cents: i64) -> OrderLine {
        OrderLine {
            sku: sku.into(),
            product_name: sku.into(),
            quantity,
            unit_price: Money::from_cents(cents),
        }
    }

    #[test]
    fn total_is_the_sum_of_the_lines() {
        let order = Order::confirm(
            "alice",
            vec![line("KB-001", 1, 8990), line("MS-001", 2, 2990)],
            Utc::now(),
        )
        .unwrap();
        assert_eq!(order.total(), Money::from_cents(14970));
        assert_eq!(order.id(), None);
    }

    #[test]
    fn rules_reject_bad_orders() {
        let now = Utc::now();
        assert!(matches!(
            Order::confirm("", vec![line("A", 1, 1)], now),
            Err(OrderError::InvalidCustomer(_))
        ));
        assert!(matches!(
            Order::confirm("a b", vec![line("A", 1, 1)], now),
            Err(OrderError::InvalidCustomer(_))
        ));
        assert_eq!(
            Order::confirm("bob", vec![], now).err(),
            Some(OrderError::NoItems)
        );
        assert!(matches!(
            Order::confirm("bob", vec![line("A", 0, 1)], now),
            Err(OrderError::InvalidQuantity { .. })
        ));
        assert!(matches!(
            Order::confirm("bob", vec![line("A", -3, 1)], now),
            Err(OrderError::InvalidQuantity { .. })
        ));
        assert_eq!(
            Order::confirm("bob", vec![line("A", 2, i64::MAX)], now).err(),
            Some(OrderError::TotalTooLarge)
        );
    }

    #[test]
    fn the_stored_order_records_its_event_with_the_full_data() {
        let mut order = Order::confirm("alice", vec![line("MS-001", 3, 2990)], Utc::now()).unwrap();
        order.stored_as(42);
        let records = order.drain_events(42).unwrap();
        assert_eq!(records.len(), 1);
        assert_eq!(records[0].aggregate_id.as_deref(), Some("42"));
        assert_eq!(records[0].message_type, "shop.order.OrderConfirmed");
        let payload: OrderConfirmed = serde_json::from_str(&records[0].payload).unwrap();
        assert_eq!(payload.order_id, 42);
        assert_eq!(payload.lines[0].quantity, 3);
        assert_eq!(payload.total, Money::from_cents(8970));
    }
}
