//! The command that places an order, and the rules an order must follow.

use serde::Deserialize;

/// Most lines in one order.
pub const MAX_LINES: usize = 100;
/// Most units of one line.
pub const MAX_QUANTITY: i64 = 10_000;
/// Longest customer name (it becomes the local part of an email address).
pub const MAX_CUSTOMER_LEN: usize = 64;

/// The command: who orders what (the body of `POST /orders`).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct PlaceOrder {
    /// The customer's name, e.g. `alice` (emails go to `alice@example.com`).
    pub customer: String,
    /// What to order.
    pub items: Vec<Item>,
}

/// One requested item.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct Item {
    /// The product.
    pub sku: String,
    /// Units, 1 to [`MAX_QUANTITY`].
    pub quantity: i64,
}

/// Why an order cannot be placed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum OrderError {
    /// The customer is empty or not usable in an email address.
    #[error("customer must be 1 to {MAX_CUSTOMER_LEN} letters, digits, '.', '_', '-' or '+' (got `{0}`)")]
    InvalidCustomer(String),
    /// No items.
    #[error("an order needs at least one item")]
    NoItems,
    /// Too many items.
    #[error("an order has at most {MAX_LINES} items")]
    TooManyItems,
    /// A quantity out of range.
    #[error("quantity of `{sku}` must be between 1 and {MAX_QUANTITY} (got {quantity})")]
    InvalidQuantity {
        /// The item's sku.
        sku: String,
        /// The quantity asked for.
        quantity: i64,
    },
    /// A sku the catalog does not know.
    #[error("unknown product `{0}`")]
    UnknownProduct(String),
    /// The total does not fit.
    #[error("the order total is too large")]
    TotalTooLarge,
}

impl PlaceOrder {
    /// Checks the rules that need no database: customer, number of items, quantities.
    pub fn validate(&self) -> Result<(), OrderError> {
        validate_customer(&self.customer)?;
        validate_lines(self.items.iter().map(|i| (i.sku.as_str(), i.quantity)))
    }
}

pub(super) fn validate_customer(customer: &str) -> Result<(), OrderError> {
    let allowed = |c: char| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-' | '+');
    if customer.is_empty() || customer.len() > MAX_CUSTOMER_LEN || !customer.chars().all(allowed) {
        return Err(OrderError::InvalidCustomer(
            customer.chars().take(80).collect(),
        ));
    }
    Ok(())
}

pub(super) fn validate_lines<'a>(
    lines: impl ExactSizeIterator<Item = (&'a str, i64)>,
) -> Result<(), OrderError> {
    match lines.len() {
        0 => return Err(OrderError::NoItems),
        n if n > MAX_LINES => return Err(OrderError::TooManyItems),
        _ => {}
    }
    for (sku, quantity) in lines {
        if !(1..=MAX_QUANTITY).contains(&quantity) {
            return Err(OrderError::InvalidQuantity {
                sku: sku.chars().take(80).collect(),
                quantity,
            });
        }
    }
    Ok(())
}
