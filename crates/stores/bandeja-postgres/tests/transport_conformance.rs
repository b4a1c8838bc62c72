//! The transport conformance suite on PostgreSQL stores (a schema per service, see
//! `common`) and the direct (broker-less) transport: the services of one test share one
//! `DirectTransport` per namespace. It covers the dispatcher's checks (results it cannot
//! match, a claim failing part way, a lease too short for a publish) on the production
//! store's claims.

mod common;

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

use bandeja_core::transport::direct::DirectTransport;
use bandeja_core::transport::Transport;
use common::fresh_store;

async fn direct(namespace: String) -> Arc<dyn Transport> {
    static SHARED: OnceLock<Mutex<HashMap<String, DirectTransport>>> = OnceLock::new();
    let mut shared = SHARED
        .get_or_init(Mutex::default)
        .lock()
        .expect("transports");
    Arc::new(shared.entry(namespace).or_default().clone())
}

bandeja_conformance::transport_conformance_tests!(fresh_store, direct);
