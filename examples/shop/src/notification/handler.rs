//! [`NotificationHandler`]: records (and logs) the confirmation email of an order.

use std::time::Duration;

use chrono::{SubsecRound, Utc};

use bandeja::{Event, EventHandler, HandlerContext, HandlerError};

use super::{repository, Email};
use crate::order::OrderConfirmed;
use crate::ShopDb;

/// Reacts to [`OrderConfirmed`] with the confirmation email.
///
/// `delay` (`SHOP_NOTIFICATION_DELAY`, 0 by default) makes it wait **before** writing: the
/// window of the crash demo. Nothing has been written during the wait, so on SQLite the
/// handler's transaction holds no lock and other writers go on.
#[derive(Debug, Clone, Copy, Default)]
pub struct NotificationHandler {
    delay: Duration,
}

impl NotificationHandler {
    /// A handler that waits `delay` before sending.
    pub fn new(delay: Duration) -> Self {
        NotificationHandler { delay }
    }
}

impl<D: ShopDb> EventHandler<D, OrderConfirmed> for NotificationHandler {
    async fn handle(
        &self,
        ctx: &mut HandlerContext<'_, D>,
        event: Event<OrderConfirmed>,
    ) -> Result<(), HandlerError> {
        let order_id = event.payload.order_id;
        if !self.delay.is_zero() {
            tracing::info!(
                order_id,
                attempt = ctx.retry_count() + 1,
                "Order {order_id}: waiting {:?} before sending the email (SHOP_NOTIFICATION_DELAY)",
                self.delay
            );
            tokio::time::sleep(self.delay).await;
        }
        let email = Email::confirmation(&event.payload);
        repository::record_email(ctx.conn(), &email, Utc::now().trunc_subsecs(6)).await?;
        tracing::info!(
            order_id,
            "Email to {} | {} | {}",
            email.recipient,
            email.subject,
            email.body
        );
        Ok(())
    }
}
