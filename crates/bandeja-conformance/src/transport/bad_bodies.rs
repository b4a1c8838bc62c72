//! Bodies that are not messages: stored FAILED, and they block nothing.

use std::collections::BTreeMap;

use bandeja_core::envelope::Event;
use bandeja_core::record::{BoxKind, MessageKind, MessageRecord};
use bandeja_core::status::MessageStatus;
use bandeja_core::store::Inspect;
use bandeja_core::transport::{wire, Instant, Outgoing};

use super::{stop, wait_rows, Harness, Seen, WAIT};
use crate::fixtures::Ping;

/// Bodies that are not JSON, lack an id, name a type nobody here handles or carry a newer
/// schema version the handler cannot read are stored as FAILED inbox rows with the reason, and
/// the message published after them is handled: nothing is lost, nothing blocks.
pub async fn bad_bodies_are_stored_failed_and_do_not_block<S: Inspect>(h: Harness<S>) {
    let inventory = h.store().await;
    let seen = Seen::default();
    let consumer = h.service("inventory", &inventory, h.transport().await, |b| {
        b.on_event::<Ping, _>("stock", seen.clone())
    });
    let consumer = consumer.start().await.expect("start the consumer");
    let transport = h.transport().await;
    // Each body under a record of its own (its own message id: brokers dedup by it).
    let carriers: Vec<MessageRecord> = (10..14)
        .map(|n| MessageRecord::from_event(&Event::new("Ping", "k", Ping { n })).expect("record"))
        .collect();
    let good = MessageRecord::from_event(&Event::new("Ping", "k", Ping { n: 1 })).expect("record");
    let mut unknown =
        MessageRecord::from_event(&Event::new("Ping", "k", Ping { n: 2 })).expect("record");
    unknown.message_type = "conformance.Unknown".into();
    let mut newer =
        MessageRecord::from_event(&Event::new("Ping", "k", Ping { n: 3 })).expect("record");
    newer.schema_version = 9;
    // A newer version that changed a field's type: not readable as version 1 (one that
    // only added fields would be read tolerantly).
    newer.payload = r#"{"n":"three"}"#.into();
    let bodies: Vec<Vec<u8>> = vec![
        b"this is not json".to_vec(),
        br#"{"bandeja":1,"kind":"event","type":"conformance.Ping"}"#.to_vec(),
        wire::encode(&unknown, Some("rogue")),
        wire::encode(&newer, Some("rogue")),
        wire::encode(&good, Some("rogue")),
    ];
    let outgoing: Vec<Outgoing<'_>> = bodies
        .into_iter()
        .zip(carriers.iter().chain(std::iter::once(&good)))
        .map(|(body, record)| Outgoing {
            record,
            address: &good.message_type,
            partition: 0,
            body,
        })
        .collect();
    for (n, outgoing) in outgoing.iter().enumerate() {
        let results = transport
            .publish(
                MessageKind::Event,
                std::slice::from_ref(outgoing),
                Instant::now() + WAIT,
            )
            .await;
        assert!(
            results.iter().all(Result::is_ok),
            "body {n} published: {results:?}"
        );
    }
    let inbox = wait_rows(&inventory, BoxKind::InboxEvents, "all settled", |rows| {
        rows.len() == 5
            && rows.iter().all(|r| {
                matches!(
                    r.message.status,
                    MessageStatus::Completed | MessageStatus::Failed
                )
            })
    })
    .await;
    stop(consumer).await;
    assert_eq!(seen.ids(), vec![good.id], "the good message was handled");
    let reasons: BTreeMap<String, String> = inbox
        .iter()
        .filter(|r| r.message.status == MessageStatus::Failed)
        .map(|r| {
            (
                r.message.record.message_type.clone()
                    + "/"
                    + &r.message.record.schema_version.to_string()
                    + "/"
                    + &r.message
                        .record
                        .payload
                        .chars()
                        .take(20)
                        .collect::<String>(),
                r.message.last_error.clone().unwrap_or_default(),
            )
        })
        .collect();
    assert_eq!(reasons.len(), 4, "{reasons:#?}");
    let all = reasons.values().cloned().collect::<Vec<_>>().join("\n");
    for expected in [
        "not JSON",
        "not a bandeja message",
        "no subscriber for event type `conformance.Unknown`",
        "schema version 9",
    ] {
        assert!(all.contains(expected), "a row says {expected:?}:\n{all}");
    }
}
