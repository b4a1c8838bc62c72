//! Wiring of the handlers: who handles what, under which subscriber name, and over which
//! transport.
//!
//! One process can run the whole shop ([`Service::All`], the in-process transport by
//! default), or one service of it ([`Service::Order`], [`Service::Billing`],
//! [`Service::Inventory`], [`Service::Shipping`], [`Service::Notification`]), each with its
//! own database, over NATS JetStream: [`OrderConfirmed`] as an event, the order saga's
//! commands and replies on each service's command topic ([`command_topics`]).

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use bandeja::sagas::Saga;
use bandeja::transport::Transport;
use bandeja::{Bandeja, Config};

use crate::billing::{self, ChargeHandler, ChargePayment, RefundHandler, RefundPayment};
use crate::inventory::{self, ReleaseHandler, ReleaseStock, ReserveHandler, ReserveStock};
use crate::notification::{self, NotificationHandler};
use crate::order::{OrderConfirmed, OrderSaga};
use crate::shipping::{self, DispatchHandler, DispatchShipment};
use crate::steps::StepRuns;
use crate::ShopDb;

/// Which part of the shop a process runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Service {
    /// Every module (the modular monolith).
    All,
    /// Catalog and orders: `POST /orders`, `GET /orders/{id}`, `GET /products`; publishes
    /// `OrderConfirmed` and orchestrates the order saga (its database keeps the sagas).
    Order,
    /// Payments: the saga's `charge` step and its refund.
    Billing,
    /// Stock: `GET /stock/{sku}`; the saga's `reserve` step and its release.
    Inventory,
    /// Parcels: the saga's `ship` step (the pivot).
    Shipping,
    /// Emails: records the confirmation email on `OrderConfirmed`.
    Notification,
}

impl Service {
    /// The service name on the broker (`shop-order`, …); the saga's commands are sent to
    /// these names.
    pub fn name(self) -> &'static str {
        match self {
            Service::All => "shop",
            Service::Order => "shop-order",
            Service::Billing => "shop-billing",
            Service::Inventory => "shop-inventory",
            Service::Shipping => "shop-shipping",
            Service::Notification => "shop-notification",
        }
    }

    /// Whether this process runs `module`'s HTTP routes or handlers.
    pub fn runs(self, module: Service) -> bool {
        self == Service::All || self == module
    }
}

/// How the handlers behave: the notification delay (`SHOP_NOTIFICATION_DELAY`), and the
/// step handlers' delay and run log (`SHOP_STEP_DELAY`, `SHOP_RUN_LOG`).
#[derive(Debug, Clone, Default)]
pub struct Handlers {
    /// The notification handler's pause before it writes.
    pub notification_delay: Duration,
    /// The saga step handlers' pause and run log.
    pub steps: StepRuns,
}

/// The command topics of the shop on a broker, for a process running `service`: each
/// service that receives commands (the saga's steps, and the order service its replies)
/// consumes the topic named after it. A process of [`Service::All`] receives every
/// command: all of them go to its own topic, `shop`.
pub fn command_topics(service: Service) -> BTreeMap<String, String> {
    let receivers = [
        Service::All,
        Service::Order,
        Service::Billing,
        Service::Inventory,
        Service::Shipping,
    ];
    receivers
        .into_iter()
        .map(|receiver| {
            let topic = if service == Service::All {
                Service::All
            } else {
                receiver
            };
            (receiver.name().to_owned(), topic.name().to_owned())
        })
        .collect()
}

/// The shop's messaging runtime for the modules `service` runs: `OrderConfirmed` goes to
/// `notification`; the order module orchestrates `saga`; billing, inventory and shipping
/// handle its steps. In-process transport, or `transport` (a broker) when given, with
/// [`command_topics`] added to `config`'s `commands.topics` where it has none.
pub fn bandeja<D: ShopDb>(
    db: D,
    mut config: Config,
    handlers: &Handlers,
    service: Service,
    transport: Option<Arc<dyn Transport>>,
    saga: &Saga<OrderSaga>,
) -> bandeja::Result<Bandeja<D>> {
    if transport.is_some() {
        for (receiver, topic) in command_topics(service) {
            config.command_topics.entry(receiver).or_insert(topic);
        }
    }
    let mut builder = Bandeja::builder(db).config(config);
    if let Some(transport) = transport {
        builder = builder.service(service.name()).transport(transport);
    }
    let steps = &handlers.steps;
    if service.runs(Service::Order) {
        builder = builder.saga(saga);
    }
    if service.runs(Service::Billing) {
        builder = builder
            .on_command::<ChargePayment, _>(
                billing::CHARGE_SUBSCRIBER,
                ChargeHandler::new(steps.clone()),
            )
            .on_command::<RefundPayment, _>(
                billing::REFUND_SUBSCRIBER,
                RefundHandler::new(steps.clone()),
            );
    }
    if service.runs(Service::Inventory) {
        builder = builder
            .on_command::<ReserveStock, _>(
                inventory::RESERVE_SUBSCRIBER,
                ReserveHandler::new(steps.clone()),
            )
            .on_command::<ReleaseStock, _>(
                inventory::RELEASE_SUBSCRIBER,
                ReleaseHandler::new(steps.clone()),
            );
    }
    if service.runs(Service::Shipping) {
        builder = builder.on_command::<DispatchShipment, _>(
            shipping::SUBSCRIBER,
            DispatchHandler::new(steps.clone()),
        );
    }
    if service.runs(Service::Notification) {
        builder = builder.on_event::<OrderConfirmed, _>(
            notification::SUBSCRIBER,
            NotificationHandler::new(handlers.notification_delay),
        );
    }
    builder.build()
}
