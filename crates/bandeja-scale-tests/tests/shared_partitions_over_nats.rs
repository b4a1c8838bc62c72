//! Per-key order when several processes of one service pull the same NATS JetStream
//! partitions (contract item 5), on `NATS_URL` (default `nats://127.0.0.1:4222`) under a
//! stream prefix of its own (the streams are deleted afterwards).
//!
//! OS processes `a`, `b` and `c` of the service `fleet`, on one PostgreSQL schema,
//! subscribe `audit` (100 ms a run) to `fleet.Noted`. A producer (service
//! `fleet-producer`, another schema) emits 300 of them over 3 partition keys as fast as it
//! can, so the outbox publishes them in bursts. `a` and `b` run from the start; `c` starts
//! once a hundred have arrived, while the others hold batches (a process joining a running
//! service, as in a rolling deploy or a scale-out). They all pull every partition's durable
//! consumer; a partition's messages come to whichever pull the server serves, and a process
//! that stored its batch before another stored an older one would put a later message of a
//! key first in the inbox.
//!
//! Checked once nothing is live: every message ran once and committed once (see
//! `common::fleet::Snapshot`), and for each key the runs, recorded outside the handler's
//! transaction in the order they began, follow the emission order.
//!
//! The second test gives `a` a handler of 1 s and kills it (`SIGKILL`) once half the
//! messages have arrived and it is running one, with the batches and the inbox rows it
//! holds: another process takes them over and runs what it had in hand again (at least
//! once), every message is still applied once, and the order holds.
//!
//! The test fails when NATS is unreachable in CI (`CI=true`) and is skipped after a notice
//! otherwise.

mod common;

use common::fleet::{nats_url, reach_nats};
use common::shared::{self, Kill, Plan};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn processes_sharing_nats_partitions_keep_each_key_in_order() {
    run(Kill::None).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_process_killed_while_sharing_nats_partitions_loses_no_order() {
    run(Kill::A).await;
}

/// 300 messages over 3 keys, `audit` runs of 100 ms (of 1 s in `a` when it is killed).
async fn run(kill: Kill) {
    let url = nats_url();
    let prefix = format!("order{:08x}", rand::random::<u32>());
    let Some(streams) = reach_nats(&url, &prefix).await else {
        return;
    };
    shared::run(Plan {
        transport: "nats",
        url: &url,
        prefix: &prefix,
        messages: 300,
        keys: 3,
        handler_ms: 100,
        killed_handler_ms: 1000,
        joiner_takes_part: true,
        kill,
    })
    .await;
    drop(streams);
}
