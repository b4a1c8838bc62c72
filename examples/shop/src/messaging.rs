//! Wiring of the event subscribers: who listens to what, under which subscriber name.

use std::time::Duration;

use bandeja::{Bandeja, Config};

use crate::inventory::{self, InventoryHandler};
use crate::notification::{self, NotificationHandler};
use crate::order::OrderConfirmed;
use crate::ShopDb;

/// The shop's messaging runtime: [`OrderConfirmed`] goes to `inventory` and
/// `notification`, each with its own inbox row and retries. In-process transport.
pub fn bandeja<D: ShopDb>(
    db: D,
    config: Config,
    notification_delay: Duration,
) -> bandeja::Result<Bandeja<D>> {
    Bandeja::builder(db)
        .config(config)
        .on_event::<OrderConfirmed, _>(inventory::SUBSCRIBER, InventoryHandler)
        .on_event::<OrderConfirmed, _>(
            notification::SUBSCRIBER,
            NotificationHandler::new(notification_delay),
        )
        .build()
}
