//! The shop as five services over Redis Streams (see `common::services`). Uses the local
//! Redis (`REDIS_URL`, default `redis://127.0.0.1:6379`); fails if it is unreachable.

mod common;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_order_saga_runs_across_five_services_over_redis() {
    let redis = std::env::var("REDIS_URL").unwrap_or_else(|_| "redis://127.0.0.1:6379".to_owned());
    common::services::run(&[("SHOP_REDIS_URL", redis)]).await;
}
