//! The subscribers of this process: which handlers, under which names, receive which
//! message types. Several subscribers per event type (each gets its own inbox row and
//! retries); exactly one per command type.

use std::collections::HashMap;
use std::marker::PhantomData;
use std::sync::Arc;

use crate::envelope::Payload;
use crate::error::{BuildError, Result};
use crate::handler::{
    CommandAdapter, CommandHandler, ErasedHandler, EventAdapter, EventBatchAdapter,
    EventBatchHandler, EventHandler,
};
use crate::record::MessageKind;
use crate::store::Store;
use crate::tenant::TenantId;

/// One registered handler.
pub(crate) struct Subscriber<S: Store> {
    pub(crate) name: String,
    pub(crate) tenant: Option<TenantId>,
    pub(crate) handler: Arc<dyn ErasedHandler<S>>,
}

/// Every handler of the process, by kind and message type.
pub(crate) struct Registry<S: Store> {
    by_type: HashMap<(MessageKind, String), Vec<Subscriber<S>>>,
}

impl<S: Store> Default for Registry<S> {
    fn default() -> Self {
        Registry {
            by_type: HashMap::new(),
        }
    }
}

impl<S: Store> Registry<S> {
    fn add(
        &mut self,
        kind: MessageKind,
        message_type: &str,
        subscriber: Subscriber<S>,
    ) -> Result<()> {
        if !crate::names::is_usable_name(&subscriber.name) {
            return Err(BuildError::subscriber_name(&subscriber.name, message_type).into());
        }
        if !crate::names::is_usable_type_name(message_type) {
            return Err(BuildError::invalid_message_type(message_type, &subscriber.name).into());
        }
        let list = self
            .by_type
            .entry((kind, message_type.to_owned()))
            .or_default();
        if list.iter().any(|s| s.name == subscriber.name) {
            return Err(BuildError::duplicate_subscriber(message_type, &subscriber.name).into());
        }
        if let (MessageKind::Command, Some(existing)) = (kind, list.first()) {
            let error =
                BuildError::second_command_handler(message_type, &subscriber.name, &existing.name);
            return Err(error.into());
        }
        list.push(subscriber);
        Ok(())
    }

    fn add_erased(
        &mut self,
        kind: MessageKind,
        message_type: &str,
        name: &str,
        tenant: Option<TenantId>,
        handler: Arc<dyn ErasedHandler<S>>,
    ) -> Result<()> {
        let name = name.to_owned();
        self.add(
            kind,
            message_type,
            Subscriber {
                name,
                tenant,
                handler,
            },
        )
    }

    pub(crate) fn add_event<T: Payload, H: EventHandler<S, T>>(
        &mut self,
        name: &str,
        tenant: Option<TenantId>,
        handler: H,
    ) -> Result<()> {
        crate::upcast::check::<T>()?;
        crate::upcast::warn_if_strict::<T>(name);
        let handler = Arc::new(EventAdapter(handler, PhantomData::<fn() -> T>));
        self.add_erased(MessageKind::Event, T::TYPE, name, tenant, handler)
    }

    pub(crate) fn add_event_batch<T: Payload, H: EventBatchHandler<S, T>>(
        &mut self,
        name: &str,
        tenant: Option<TenantId>,
        handler: H,
    ) -> Result<()> {
        crate::upcast::check::<T>()?;
        crate::upcast::warn_if_strict::<T>(name);
        let handler = Arc::new(EventBatchAdapter(handler, PhantomData::<fn() -> T>));
        self.add_erased(MessageKind::Event, T::TYPE, name, tenant, handler)
    }

    pub(crate) fn add_command<T: Payload, H: CommandHandler<S, T>>(
        &mut self,
        name: &str,
        tenant: Option<TenantId>,
        handler: H,
    ) -> Result<()> {
        crate::upcast::check::<T>()?;
        crate::upcast::warn_if_strict::<T>(name);
        let handler = Arc::new(CommandAdapter(handler, PhantomData::<fn() -> T>));
        self.add_erased(MessageKind::Command, T::TYPE, name, tenant, handler)
    }

    /// Whether any handler of `kind` exists.
    pub(crate) fn has(&self, kind: MessageKind) -> bool {
        self.by_type.keys().any(|(k, _)| *k == kind)
    }

    /// The message types of `kind` that have subscribers, sorted.
    pub(crate) fn types(&self, kind: MessageKind) -> Vec<String> {
        let mut types: Vec<String> = self
            .by_type
            .keys()
            .filter(|(k, _)| *k == kind)
            .map(|(_, t)| t.clone())
            .collect();
        types.sort();
        types
    }

    /// Every subscription of the process (what it registers in the store), sorted.
    pub(crate) fn subscriptions(&self) -> Vec<crate::subscriptions::Subscription> {
        let mut subscriptions: Vec<crate::subscriptions::Subscription> = self
            .by_type
            .iter()
            .flat_map(|((kind, message_type), list)| {
                list.iter()
                    .map(move |s| crate::subscriptions::Subscription {
                        kind: *kind,
                        message_type: message_type.clone(),
                        subscriber: s.name.clone(),
                        tenant: s.tenant.clone(),
                    })
            })
            .collect();
        subscriptions.sort_by(|a, b| {
            (a.kind_name(), &a.message_type, &a.subscriber).cmp(&(
                b.kind_name(),
                &b.message_type,
                &b.subscriber,
            ))
        });
        subscriptions
    }

    /// The subscriber names of `kind`, sorted, each once (a name may take several types).
    pub(crate) fn subscriber_names(&self, kind: MessageKind) -> Vec<&str> {
        let mut names: Vec<&str> = self
            .by_type
            .iter()
            .filter(|((k, _), _)| *k == kind)
            .flat_map(|(_, list)| list.iter().map(|s| s.name.as_str()))
            .collect();
        names.sort_unstable();
        names.dedup();
        names
    }

    /// The handler registered for `message_type` under `name`.
    pub(crate) fn find(
        &self,
        kind: MessageKind,
        message_type: &str,
        name: &str,
    ) -> Option<&Subscriber<S>> {
        self.by_type
            .get(&(kind, message_type.to_owned()))?
            .iter()
            .find(|s| s.name == name)
    }
}
