//! Wiring of the event subscribers: who listens to what, under which subscriber name, and
//! over which transport.
//!
//! One process can run the whole shop ([`Service::All`], the in-process transport by
//! default), or one service of it ([`Service::Order`], [`Service::Inventory`],
//! [`Service::Notification`]), each with its own database, exchanging
//! [`OrderConfirmed`] over NATS JetStream.

use std::sync::Arc;
use std::time::Duration;

use bandeja::transport::Transport;
use bandeja::{Bandeja, Config};

use crate::inventory::{self, InventoryHandler};
use crate::notification::{self, NotificationHandler};
use crate::order::OrderConfirmed;
use crate::ShopDb;

/// Which part of the shop a process runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Service {
    /// Every module (the modular monolith).
    All,
    /// Catalog and orders: `POST /orders`, `GET /orders/{id}`, `GET /products`; publishes
    /// `OrderConfirmed`.
    Order,
    /// Stock: `GET /stock/{sku}`; takes stock on `OrderConfirmed`.
    Inventory,
    /// Emails: records the confirmation email on `OrderConfirmed`.
    Notification,
}

impl Service {
    /// The service name on the broker (`shop-order`, …).
    pub fn name(self) -> &'static str {
        match self {
            Service::All => "shop",
            Service::Order => "shop-order",
            Service::Inventory => "shop-inventory",
            Service::Notification => "shop-notification",
        }
    }

    /// Whether this process runs `module`'s HTTP routes or handler.
    pub fn runs(self, module: Service) -> bool {
        self == Service::All || self == module
    }
}

/// The shop's messaging runtime: [`OrderConfirmed`] goes to `inventory` and
/// `notification` (those this process runs), each with its own inbox row and retries.
/// In-process transport, or `transport` (a broker) when given.
pub fn bandeja<D: ShopDb>(
    db: D,
    config: Config,
    notification_delay: Duration,
    service: Service,
    transport: Option<Arc<dyn Transport>>,
) -> bandeja::Result<Bandeja<D>> {
    let mut builder = Bandeja::builder(db).config(config);
    if let Some(transport) = transport {
        builder = builder.service(service.name()).transport(transport);
    }
    if service.runs(Service::Inventory) {
        builder = builder.on_event::<OrderConfirmed, _>(inventory::SUBSCRIBER, InventoryHandler);
    }
    if service.runs(Service::Notification) {
        builder = builder.on_event::<OrderConfirmed, _>(
            notification::SUBSCRIBER,
            NotificationHandler::new(notification_delay),
        );
    }
    builder.build()
}
