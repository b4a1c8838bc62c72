//! The confirmation email of an order.

use crate::order::OrderConfirmed;

/// An email to send.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Email {
    /// The order it is about.
    pub order_id: i64,
    /// `<customer>@example.com`.
    pub recipient: String,
    /// `Order #<id> confirmed`.
    pub subject: String,
    /// The items and the total.
    pub body: String,
}

impl Email {
    /// The confirmation email of `order`.
    pub fn confirmation(order: &OrderConfirmed) -> Email {
        let items: Vec<String> = order
            .lines
            .iter()
            .map(|line| format!("{} x {}", line.quantity, line.product_name))
            .collect();
        Email {
            order_id: order.order_id,
            recipient: format!("{}@example.com", order.customer),
            subject: format!("Order #{} confirmed", order.order_id),
            body: format!(
                "Thanks for your order: {}. Total: {} {}.",
                items.join(", "),
                order.total,
                order.currency
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::money::Money;
    use crate::order::ConfirmedLine;

    #[test]
    fn lists_the_items_and_the_total() {
        let line = |sku: &str, name: &str, quantity| ConfirmedLine {
            sku: sku.into(),
            product_name: name.into(),
            quantity,
        };
        let order = OrderConfirmed {
            order_id: 42,
            customer: "alice".into(),
            lines: vec![
                line("KB-001", "Mechanical keyboard", 1),
                line("MS-001", "Wireless mouse", 2),
            ],
            total: Money::from_cents(14970),
            currency: "EUR".into(),
            confirmed_at: chrono::Utc::now(),
        };
        let email = Email::confirmation(&order);
        assert_eq!(email.recipient, "alice@example.com");
        assert_eq!(email.subject, "Order #42 confirmed");
        assert_eq!(
            email.body,
            "Thanks for your order: 1 x Mechanical keyboard, 2 x Wireless mouse. Total: 149.70 EUR."
        );
    }
}
