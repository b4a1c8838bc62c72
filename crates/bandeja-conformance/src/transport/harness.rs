//! The [`Harness`] a transport check gets: the services of one test, each on its own store,
//! all on one broker namespace.

use std::any::Any;
use std::sync::{Arc, Mutex};

use futures::future::BoxFuture;

use bandeja_core::config::Config;
use bandeja_core::runtime::{Bandeja, BandejaBuilder};
use bandeja_core::store::Inspect;
use bandeja_core::transport::Transport;

use crate::fixtures::fast_config;

/// A fresh store and what must live as long as it.
pub type StoreFuture<S> = BoxFuture<'static, (S, Box<dyn Any + Send>)>;

/// A transport in a namespace.
pub type TransportFuture = BoxFuture<'static, Arc<dyn Transport>>;

type MakeStore<S> = Box<dyn Fn() -> StoreFuture<S> + Send + Sync>;

type MakeTransport = Box<dyn Fn(String) -> TransportFuture + Send + Sync>;

/// Builds the services of one test: each its own store, all on one broker namespace.
pub struct Harness<S> {
    stores: MakeStore<S>,
    transports: MakeTransport,
    namespace: String,
    guards: Mutex<Vec<Box<dyn Any + Send>>>,
}

impl<S: Inspect> Harness<S> {
    /// A harness with a fresh random namespace.
    pub fn new(
        stores: impl Fn() -> StoreFuture<S> + Send + Sync + 'static,
        transports: impl Fn(String) -> TransportFuture + Send + Sync + 'static,
    ) -> Self {
        Harness {
            stores: Box::new(stores),
            transports: Box::new(transports),
            namespace: format!("t{:08x}", rand::random::<u32>()),
            guards: Mutex::new(Vec::new()),
        }
    }

    /// The broker namespace (the prefix of every name) of this test.
    pub fn namespace(&self) -> &str {
        &self.namespace
    }

    /// A fresh store (kept alive until the harness drops).
    pub async fn store(&self) -> S {
        let (store, guard) = (self.stores)().await;
        if let Ok(mut guards) = self.guards.lock() {
            guards.push(guard);
        }
        store
    }

    /// A transport on this test's namespace.
    pub async fn transport(&self) -> Arc<dyn Transport> {
        (self.transports)(self.namespace.clone()).await
    }

    /// The configuration every service of the suite uses: short intervals, and the topics
    /// of the services `billing` and `shipping`.
    pub fn config(&self) -> Config {
        let mut config = fast_config();
        for service in ["billing", "shipping"] {
            config
                .command_topics
                .insert(service.to_owned(), format!("{service}-commands"));
        }
        config
    }

    /// A service on `store` and `transport`.
    pub fn service(
        &self,
        name: &str,
        store: &S,
        transport: Arc<dyn Transport>,
        configure: impl FnOnce(BandejaBuilder<S>) -> BandejaBuilder<S>,
    ) -> Bandeja<S> {
        configure(
            Bandeja::builder(store.clone())
                .config(self.config())
                .service(name)
                .transport(transport),
        )
        .build()
        .expect("build the service")
    }
}
