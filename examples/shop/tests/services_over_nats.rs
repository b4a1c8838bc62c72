//! The shop as five services over NATS JetStream (see `common::services`). Uses the local
//! NATS server (`NATS_URL`, default `nats://127.0.0.1:4222`); fails if it is unreachable.

mod common;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_order_saga_runs_across_five_services_happy_path_and_shortage() {
    let nats = std::env::var("NATS_URL").unwrap_or_else(|_| "nats://127.0.0.1:4222".to_owned());
    common::services::run(&[("SHOP_NATS_URL", nats)]).await;
}
