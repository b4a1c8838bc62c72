//! Property tests: random input into every parser that takes text from outside the program
//! (the wire format, durations, TOML and environment configuration, tenant ids). Each one
//! must answer `Ok` or a typed error, never panic; what parses must read back the same; an
//! unknown configuration key must be an error that names it.
//!
//! The case counts are small so the file runs in a few seconds; failures are not persisted
//! (no `proptest-regressions` files in the source tree): proptest prints the minimal failing
//! input instead.

use std::collections::BTreeMap;
use std::time::Duration;

use bandeja_core::config::{format_duration, parse_duration};
use bandeja_core::transport::wire::{self, WireError, WIRE_VERSION};
use bandeja_core::{
    Config, ConfigError, ConfigErrorKind, Headers, MessageId, MessageKind, MessageRecord, TenantId,
};
use chrono::{DateTime, Utc};
use proptest::prelude::*;
use serde_json::Value;

/// `cases` cases, nothing written to disk.
fn cases(cases: u32) -> ProptestConfig {
    ProptestConfig {
        cases,
        failure_persistence: None,
        ..ProptestConfig::default()
    }
}

// ---------------------------------------------------------------------------------------
// Strategies
// ---------------------------------------------------------------------------------------

/// Any JSON value a store can keep, a few levels deep (strings without NUL characters,
/// which no store takes: `nul_anywhere_is_refused` covers them).
fn json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        any::<f64>().prop_map(Value::from),
        "[^\\x00]{0,12}".prop_map(Value::from),
    ];
    leaf.prop_recursive(3, 24, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            prop::collection::btree_map("[^\\x00]{0,8}", inner, 0..4)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

/// A valid tenant id (no control characters, at most 24 characters so at most 96 bytes).
fn tenant() -> impl Strategy<Value = TenantId> {
    "[^\\p{Cc}]{1,24}".prop_map(|s| TenantId::new(s).expect("a valid tenant id"))
}

/// A usable message type name: no whitespace, no control characters.
fn type_name() -> impl Strategy<Value = String> {
    "[^\\s\\p{Cc}]{1,40}"
}

/// Any text without NUL characters.
fn text() -> impl Strategy<Value = String> {
    "[^\\x00]{0,16}"
}

fn message_id() -> impl Strategy<Value = MessageId> {
    any::<u128>().prop_map(|n| MessageId(uuid::Uuid::from_u128(n)))
}

/// Between 1970 and 2100, to the nanosecond.
fn instant() -> impl Strategy<Value = DateTime<Utc>> {
    (0i64..4_102_444_800, 0u32..1_000_000_000).prop_map(|(secs, nanos)| {
        DateTime::from_timestamp(secs, nanos).expect("a timestamp in range")
    })
}

fn headers() -> impl Strategy<Value = Headers> {
    (
        prop::option::of(text()),
        prop::option::of(message_id()),
        prop::option::of(text()),
        prop::option::of(text()),
        // Application headers: names that are not those of the named headers.
        prop::collection::btree_map("x-[a-z0-9-]{1,10}", text(), 0..3),
    )
        .prop_map(
            |(correlation_id, causation_id, traceparent, source_service, extra)| Headers {
                correlation_id,
                causation_id,
                traceparent,
                source_service,
                extra,
            },
        )
}

/// A record as a store would hand it to a transport: any field contents the envelope
/// rules allow.
fn record() -> impl Strategy<Value = MessageRecord> {
    let identity = (
        message_id(),
        any::<bool>(),
        tenant(),
        type_name(),
        any::<u32>(),
        instant(),
    );
    let body = (
        prop::option::of(text()),
        prop::option::of(text()),
        prop::option::of(text()),
        json(),
        headers(),
    );
    let command = (tenant(), tenant(), "[^\\x00]{1,16}");
    (identity, body, command).prop_map(
        |(
            (id, is_command, tenant_id, message_type, schema_version, occurred_at),
            (partition_key, aggregate_type, aggregate_id, payload, headers),
            (source, target, service),
        )| {
            let kind = if is_command {
                MessageKind::Command
            } else {
                MessageKind::Event
            };
            MessageRecord {
                id,
                kind,
                tenant_id: if is_command {
                    source.clone()
                } else {
                    tenant_id
                },
                message_type,
                schema_version,
                partition_key,
                aggregate_type,
                aggregate_id,
                payload: payload.to_string(),
                headers,
                source_tenant_id: is_command.then_some(source),
                target_tenant_id: is_command.then_some(target),
                target_service: is_command.then_some(service),
                occurred_at,
            }
        },
    )
}

/// The field names of the wire format, and a few that are not.
fn wire_field() -> impl Strategy<Value = String> {
    prop_oneof![
        prop::sample::select(vec![
            "bandeja",
            "id",
            "kind",
            "type",
            "schema_version",
            "tenant_id",
            "partition_key",
            "aggregate_type",
            "aggregate_id",
            "payload",
            "headers",
            "source_tenant_id",
            "target_tenant_id",
            "target_service",
            "occurred_at",
            "specversion",
            "source",
            "time",
            "datacontenttype",
            "subject",
            "bandejakind",
            "schemaversion",
            "tenantid",
            "partitionkey",
            "aggregatetype",
            "correlationid",
            "causationid",
            "traceparent",
            "sourcetenantid",
            "targettenantid",
            "targetservice",
            "bandejaheaders",
            "data",
            "data_base64",
        ])
        .prop_map(str::to_owned),
        "[a-z_]{1,12}",
    ]
}

/// Plausible values for a wire field: the right shape with odd contents, or anything.
fn wire_value() -> impl Strategy<Value = Value> {
    prop_oneof![
        json(),
        Just(Value::from(WIRE_VERSION)),
        Just(Value::from("1.0")),
        Just(Value::from("1")),
        Just(Value::from(r#"{"x-app":"v"}"#)),
        Just(Value::from("event")),
        Just(Value::from("command")),
        Just(Value::from("")),
        Just(Value::from(" ")),
        Just(Value::from("x".repeat(200))),
        Just(Value::from(u64::from(u32::MAX) + 1)),
        Just(Value::from(-1)),
        message_id().prop_map(|id| Value::from(id.to_string())),
        ".{0,8}".prop_map(|s| Value::from(format!("2026-11-30T12:00:00{s}Z"))),
    ]
}

fn kind() -> impl Strategy<Value = MessageKind> {
    prop_oneof![Just(MessageKind::Event), Just(MessageKind::Command)]
}

/// A valid envelope with up to four fields replaced by odd values or removed.
fn mutated_envelope() -> impl Strategy<Value = Vec<u8>> {
    (
        record(),
        prop::collection::vec((wire_field(), prop::option::of(wire_value())), 0..5),
        any::<bool>(),
    )
        .prop_map(|(record, edits, legacy)| {
            let body = if legacy {
                wire::encode_legacy(&record, None)
            } else {
                wire::encode(&record, None)
            };
            let mut doc: Value = serde_json::from_slice(&body).expect("encode writes JSON");
            let object = doc.as_object_mut().expect("the envelope is an object");
            for (field, value) in edits {
                match value {
                    Some(value) => {
                        object.insert(field, value);
                    }
                    None => {
                        object.remove(&field);
                    }
                }
            }
            doc.to_string().into_bytes()
        })
}

/// Text made of what durations are written with, so that many of them parse.
fn duration_like() -> impl Strategy<Value = String> {
    prop_oneof![
        "[0-9PpTtWwDdHhMmSsYyNnUuµ .+-]{0,16}",
        "[0-9]{1,3}(\\.[0-9]{1,3})?(ns|us|µs|ms|s|m|h|d|w)( ?[0-9]{1,3}(ns|us|ms|s|m|h))?",
        "[Pp]([0-9]{1,3}[WwDd])?([Tt]([0-9]{1,3}[Hh])?([0-9]{1,3}[Mm])?([0-9]{1,3}(\\.[0-9]{1,9})?[Ss])?)?",
        any::<String>(),
    ]
}

// ---------------------------------------------------------------------------------------
// Configuration keys
// ---------------------------------------------------------------------------------------

const GROUPS: [&str; 4] = [
    "events.outbox",
    "events.inbox",
    "commands.outbox",
    "commands.inbox",
];

/// A valid duration written in one of the accepted forms.
fn duration_text() -> impl Strategy<Value = String> {
    prop_oneof![
        (0u64..100_000).prop_map(|ms| format_duration(Duration::from_millis(ms))),
        (1u64..1_000).prop_map(|s| format!("{s}s")),
        (1u64..100, 0u64..60).prop_map(|(m, s)| format!("{m}m{s}s")),
    ]
}

/// A key of a worker group (every key [`bandeja_core::config::keys`] lists) with a value
/// of the right type (range checks are validation's business, not the parser's).
fn group_entry() -> impl Strategy<Value = (&'static str, toml::Value)> {
    prop::sample::select(group_keys())
        .prop_flat_map(|key| group_value(key).prop_map(move |value| (key, value)))
}

/// Values of the right type for the group key `key`: a generator per key, or by the type
/// of its default, or (a key of a type this test does not know yet) its default.
fn group_value(key: &'static str) -> BoxedStrategy<toml::Value> {
    let string = |s: &str| toml::Value::String(s.to_owned());
    let duration = || duration_text().prop_map(toml::Value::String).boxed();
    let default = toml::Value::try_from(Config::default())
        .ok()
        .and_then(|doc| doc.get("events")?.get("inbox")?.get(key).cloned());
    match (key, default) {
        ("enabled", _) => prop_oneof![
            any::<bool>().prop_map(toml::Value::Boolean),
            Just(string("auto"))
        ]
        .boxed(),
        ("batch-size", _) => (1i64..=10_000).prop_map(toml::Value::Integer).boxed(),
        ("max-retries" | "max-takeovers", _) => {
            (0i64..=1_000).prop_map(toml::Value::Integer).boxed()
        }
        ("retry-backoff-multiplier", _) => (1.0f64..10.0).prop_map(toml::Value::Float).boxed(),
        ("retry-jitter", _) => (0.0f64..=1.0).prop_map(toml::Value::Float).boxed(),
        ("handler-transaction", _) => prop::sample::select(vec!["auto", "message", "batch"])
            .prop_map(string)
            .boxed(),
        ("completion-mode", _) => prop::sample::select(vec!["update", "delete", "archive"])
            .prop_map(string)
            .boxed(),
        ("retention", _) => prop_oneof![duration_text(), Just("off".to_owned())]
            .prop_map(toml::Value::String)
            .boxed(),
        ("handler-timeouts", _) => {
            prop::collection::btree_map("[a-z][a-z0-9-]{0,8}", duration_text(), 0..3)
                .prop_map(|limits| {
                    let table = limits.into_iter().map(|(k, v)| (k, toml::Value::String(v)));
                    toml::Value::Table(table.collect())
                })
                .boxed()
        }
        (_, Some(toml::Value::String(text))) if parse_duration(&text).is_ok() => duration(),
        (_, Some(toml::Value::Boolean(_))) => any::<bool>().prop_map(toml::Value::Boolean).boxed(),
        (_, Some(default)) => Just(default).boxed(),
        (_, None) => panic!("`{key}` has no default in `events.inbox`"),
    }
}

fn staleness_entry() -> impl Strategy<Value = (&'static str, toml::Value)> {
    prop_oneof![
        any::<bool>().prop_map(|b| ("enabled", toml::Value::Boolean(b))),
        prop::sample::select(vec!["pending", "processing", "interval"])
            .prop_flat_map(|key| duration_text().prop_map(move |d| (key, toml::Value::String(d)))),
    ]
}

/// A TOML document of known keys with values that parse (they may not validate).
fn known_document() -> impl Strategy<Value = toml::Table> {
    (
        prop::collection::vec((0usize..4, group_entry()), 0..12),
        prop::collection::vec(staleness_entry(), 0..3),
        prop::option::of(duration_text()),
        prop::collection::btree_map("[a-z][a-z0-9-]{0,8}", "[a-z.]{1,12}", 0..3),
    )
        .prop_map(|(fields, staleness, stuck, topics)| {
            let mut doc = toml::Table::new();
            for (group, (field, value)) in fields {
                let (parent, child) = GROUPS[group].split_once('.').expect("dotted");
                table(table(&mut doc, parent), child).insert(field.to_owned(), value);
            }
            for (field, value) in staleness {
                table(&mut doc, "staleness").insert(field.to_owned(), value);
            }
            if let Some(stuck) = stuck {
                doc.insert("stuck-threshold".into(), toml::Value::String(stuck));
            }
            if !topics.is_empty() {
                let routes = table(table(&mut doc, "commands"), "topics");
                for (service, topic) in topics {
                    routes.insert(service, toml::Value::String(topic));
                }
            }
            doc
        })
}

/// The sub-table `name` of `doc`, created if missing.
fn table<'a>(doc: &'a mut toml::Table, name: &str) -> &'a mut toml::Table {
    doc.entry(name.to_owned())
        .or_insert_with(|| toml::Value::Table(toml::Table::new()))
        .as_table_mut()
        .expect("a table")
}

/// The keys of a worker group, from the configuration's own key list.
fn group_keys() -> Vec<&'static str> {
    let keys = bandeja_core::config::keys().iter();
    keys.filter(|k| k.path().starts_with(&["events", "outbox"]))
        .map(|k| k.path()[2])
        .collect()
}

/// The keys of `[staleness]`, likewise.
fn staleness_keys() -> Vec<&'static str> {
    let keys = bandeja_core::config::keys().iter();
    keys.filter(|k| k.path().starts_with(&["staleness"]))
        .map(|k| k.path()[1])
        .collect()
}

/// Where an unknown key goes, and the keys known there.
fn level_keys(level: usize) -> (&'static str, Vec<&'static str>) {
    match level {
        0 => (
            "",
            vec!["stuck-threshold", "events", "commands", "staleness", "app"],
        ),
        1 => ("events", vec!["outbox", "inbox"]),
        2 => ("commands", vec!["outbox", "inbox", "topics"]),
        3 => ("staleness", staleness_keys()),
        n => (GROUPS[n - 4], group_keys()),
    }
}

/// Every variable [`Config::apply_env`] knows: each key's, in bandeja's names and the seed's.
fn known_env_vars() -> Vec<String> {
    let mut names = Vec::new();
    for key in bandeja_core::config::keys() {
        names.push(key.env_var());
        names.extend(key.seed().map(|seed| seed.env_var()));
    }
    names
}

/// A known variable with a value that parses.
fn env_entry() -> impl Strategy<Value = (String, String)> {
    let scalar = |v: &toml::Value| match v {
        toml::Value::String(s) => s.clone(),
        toml::Value::Table(table) => {
            let pairs: Vec<String> = table
                .iter()
                .map(|(k, v)| format!("{k}={}", v.as_str().unwrap_or_default()))
                .collect();
            pairs.join(",")
        }
        other => other.to_string(),
    };
    prop_oneof![
        (0usize..4, group_entry()).prop_map(move |(group, (key, value))| {
            let upper = |s: &str| s.to_ascii_uppercase().replace(['-', '.'], "_");
            (
                format!("BANDEJA_{}_{}", upper(GROUPS[group]), upper(key)),
                scalar(&value),
            )
        }),
        duration_text().prop_map(|d| ("BANDEJA_STUCK_THRESHOLD".to_owned(), d)),
        prop::collection::btree_map("[a-z]{1,6}", "[a-z.]{1,8}", 0..3).prop_map(|topics| {
            let pairs: Vec<String> = topics.iter().map(|(s, t)| format!("{s}={t}")).collect();
            ("BANDEJA_COMMANDS_TOPICS".to_owned(), pairs.join(","))
        }),
    ]
}

/// A `BANDEJA_` variable name that is neither known nor reserved.
fn unknown_env_var() -> impl Strategy<Value = String> {
    let known = known_env_vars();
    prop_oneof![
        "[A-Z0-9_]{1,24}",
        // Near misses: a known group prefix with an odd key.
        (
            prop::sample::select(vec!["EVENTS_OUTBOX_", "COMMANDS_INBOX_", "STALENESS_"]),
            "[A-Z_]{1,12}"
        )
            .prop_map(|(prefix, key)| format!("{prefix}{key}")),
    ]
    .prop_map(|rest| format!("BANDEJA_{rest}"))
    .prop_filter("neither known nor reserved", move |name| {
        !known.contains(name) && !bandeja_core::config::RESERVED_ENV_VARS.contains(&name.as_str())
    })
}

/// The key a configuration error names (for a conflict between the two names of one
/// setting, the first).
fn named_key(error: &ConfigError) -> Option<&str> {
    error.key()
}

// ---------------------------------------------------------------------------------------
// Properties
// ---------------------------------------------------------------------------------------

proptest! {
    #![proptest_config(cases(512))]

    /// Any bytes at all: a typed error (or, by chance, a message), never a panic.
    #[test]
    fn wire_decode_never_panics_on_random_bytes(
        kind in kind(),
        body in prop::collection::vec(any::<u8>(), 0..256),
    ) {
        if let Ok(record) = wire::decode(kind, &body) {
            prop_assert_eq!(record.kind, kind);
        }
    }

    /// Any JSON document: not a message (a typed error), or a message that round-trips.
    #[test]
    fn wire_decode_never_panics_on_random_json(kind in kind(), doc in json()) {
        let body = doc.to_string();
        match wire::decode(kind, body.as_bytes()) {
            Ok(record) => {
                prop_assert_eq!(wire::decode(kind, &wire::encode(&record, None)), Ok(record));
            }
            Err(error) => prop_assert!(!error.to_string().is_empty()),
        }
    }
}

proptest! {
    #![proptest_config(cases(256))]

    /// What `encode` writes, `decode` reads back to the same record (the source service
    /// filled in when the record had none).
    #[test]
    fn wire_encoding_round_trips(record in record(), service in prop::option::of("[a-z]{1,8}")) {
        let body = wire::encode(&record, service.as_deref());
        let decoded = wire::decode(record.kind, &body);
        let mut expected = record.clone();
        // An empty source service is none: a CloudEvent's `source` cannot be empty.
        if expected.headers.source_service.as_deref().is_none_or(str::is_empty) {
            expected.headers.source_service = service;
        }
        prop_assert_eq!(decoded, Ok(expected));
        let other = match record.kind {
            MessageKind::Event => MessageKind::Command,
            MessageKind::Command => MessageKind::Event,
        };
        let is_kind_error = matches!(wire::decode(other, &body), Err(WireError::Kind { .. }));
        prop_assert!(is_kind_error, "the wrong kind is a Kind error");
    }

    /// A NUL character in any text of an envelope (PostgreSQL cannot store one): refused
    /// with a reason that says so, so the message becomes a rejected row instead of an
    /// insert that fails on every redelivery.
    #[test]
    fn nul_anywhere_is_refused(
        record in record(),
        field in 0usize..6,
        before in "[a-z]{0,4}",
        after in "[a-z]{0,4}",
    ) {
        let nul = format!("{before}\0{after}");
        let mut legacy: Value = serde_json::from_slice(&wire::encode_legacy(&record, None))
            .expect("encode writes JSON");
        let mut event: Value =
            serde_json::from_slice(&wire::encode(&record, None)).expect("encode writes JSON");
        match field {
            0 => (legacy["aggregate_id"], event["subject"]) = (nul.clone().into(), nul.into()),
            1 => (legacy["partition_key"], event["partitionkey"]) = (nul.clone().into(), nul.into()),
            2 => (legacy["aggregate_type"], event["aggregatetype"]) = (nul.clone().into(), nul.into()),
            3 => {
                legacy["headers"]["correlation_id"] = nul.clone().into();
                event["correlationid"] = nul.into();
            }
            4 => {
                event["bandejaheaders"] = serde_json::json!({ "x-app": nul }).to_string().into();
                legacy["headers"]["x-app"] = nul.into();
            }
            _ => {
                legacy["payload"] = serde_json::json!({ "note": nul });
                event["data"] = serde_json::json!({ "note": nul });
            }
        }
        for doc in [legacy, event] {
            let refused = wire::decode(record.kind, doc.to_string().as_bytes());
            let says_nul = matches!(&refused, Err(WireError::NotAMessage(m)) if m.contains("NUL character"));
            prop_assert!(says_nul, "{:?}", refused);
        }
    }

    /// A valid envelope with fields removed or replaced by odd values: a typed error that
    /// says what is wrong, or a message that round-trips. Never a panic.
    #[test]
    fn wire_decode_survives_mutated_envelopes(kind in kind(), body in mutated_envelope()) {
        match wire::decode(kind, &body) {
            Ok(record) => {
                prop_assert_eq!(record.kind, kind);
                prop_assert!(!record.message_type.trim().is_empty());
                if kind == MessageKind::Command {
                    prop_assert!(record.target_service.as_deref().is_some_and(|s| !s.is_empty()));
                }
                prop_assert_eq!(wire::decode(kind, &wire::encode(&record, None)), Ok(record));
            }
            Err(error) => {
                let is_json_error = matches!(error, WireError::NotJson(_));
                prop_assert!(!is_json_error, "the body is JSON: {}", error);
                prop_assert!(!error.to_string().is_empty());
            }
        }
    }

    /// A valid envelope cut short or with one byte changed: never a panic.
    #[test]
    fn wire_decode_survives_damaged_bodies(
        record in record(),
        cut in any::<prop::sample::Index>(),
        flip in any::<prop::sample::Index>(),
        byte in any::<u8>(),
    ) {
        let body = wire::encode(&record, None);
        let _ = wire::decode(record.kind, &body[..cut.index(body.len() + 1)]);
        let mut damaged = body.clone();
        damaged[flip.index(body.len())] = byte;
        if let Ok(decoded) = wire::decode(record.kind, &damaged) {
            prop_assert_eq!(wire::decode(record.kind, &wire::encode(&decoded, None)), Ok(decoded));
        }
    }

    /// Any text: a duration or a reason, never a panic; what parses formats and parses
    /// back to the same duration.
    #[test]
    fn duration_parser_never_panics(text in duration_like()) {
        match parse_duration(&text) {
            Ok(d) => prop_assert_eq!(parse_duration(&format_duration(d)), Ok(d)),
            Err(reason) => prop_assert!(!reason.is_empty()),
        }
    }

    /// Every duration formats to ISO-8601 and parses back exactly.
    #[test]
    fn durations_round_trip_through_iso(secs in any::<u64>(), nanos in 0u32..1_000_000_000) {
        let d = Duration::new(secs, nanos);
        prop_assert_eq!(parse_duration(&format_duration(d)), Ok(d));
    }

    /// The human and ISO-8601 forms of the same components agree; with a minus sign they
    /// are errors that say durations cannot be negative.
    #[test]
    fn human_and_iso_forms_agree(
        days in 0u64..400,
        hours in 0u64..48,
        minutes in 0u64..120,
        seconds in 0u64..120,
        millis in 0u64..1_000,
    ) {
        let expected = Duration::from_secs(((days * 24 + hours) * 60 + minutes) * 60 + seconds)
            + Duration::from_millis(millis);
        let human = format!("{days}d{hours}h{minutes}m{seconds}s{millis}ms");
        let iso = format!("P{days}DT{hours}H{minutes}M{seconds}.{millis:03}S");
        prop_assert_eq!(parse_duration(&human), Ok(expected));
        prop_assert_eq!(parse_duration(&iso), Ok(expected));
        for negative in [format!("-{human}"), format!("-{iso}"), format!("P-{days}D")] {
            let reason = parse_duration(&negative).expect_err("negative");
            prop_assert!(reason.contains("negative"), "{}: {}", negative, reason);
        }
    }

    /// Any text as a TOML document: a configuration or an error, never a panic.
    #[test]
    fn toml_loader_never_panics_on_random_text(text in prop_oneof![
        any::<String>(),
        "([a-z.\\[\\]-]{1,20} ?= ?(\"[a-zA-Z0-9 ]{0,8}\"|[0-9-]{1,6}|true|false)?\n){0,6}",
    ]) {
        if let Err(error) = Config::from_toml_str(&text) {
            prop_assert!(!error.to_string().is_empty());
        }
    }

    /// Documents of known keys with values of the right type: a configuration, or a
    /// validation error naming a key of the document.
    #[test]
    fn known_keys_load_or_name_the_key(doc in known_document()) {
        let text = toml::to_string(&doc).expect("a table serializes");
        match Config::from_toml_str(&text) {
            Ok(config) => prop_assert_eq!(config.validate().ok(), Some(())),
            Err(error) => {
                let is_validation = error.kind() == ConfigErrorKind::InvalidValue;
                prop_assert!(is_validation, "{}", error);
                let key = named_key(&error).unwrap_or_default();
                let known = key == "stuck-threshold"
                    || key.starts_with("staleness.")
                    || key.starts_with("commands.topics")
                    || GROUPS.iter().any(|g| key.starts_with(&format!("{g}.")));
                prop_assert!(known, "{}", error);
            }
        }
    }

    /// One unknown key anywhere in an otherwise loadable document: an error that names
    /// its full dotted path and lists the keys expected there.
    #[test]
    fn unknown_toml_keys_are_named(
        doc in known_document(),
        level in 0usize..8,
        name in "[a-z][a-z0-9-]{0,12}",
        value in prop_oneof![
            any::<i64>().prop_map(toml::Value::Integer),
            ".{0,6}".prop_map(toml::Value::String),
        ],
    ) {
        let (parent, known) = level_keys(level);
        prop_assume!(!known.contains(&name.as_str()));
        let mut doc = doc;
        let mut place = &mut doc;
        for part in parent.split('.').filter(|p| !p.is_empty()) {
            place = table(place, part);
        }
        place.insert(name.clone(), value);
        let text = toml::to_string(&doc).expect("a table serializes");
        let expected = if parent.is_empty() { name } else { format!("{parent}.{name}") };
        let error = Config::from_toml_str(&text).expect_err("an unknown key is an error");
        let message = error.full_message();
        let named = error.kind() == ConfigErrorKind::UnknownKey && error.key() == Some(expected.as_str());
        prop_assert!(named, "expected `{}`: {}", expected, message);
        prop_assert!(message.contains("expected one of"), "{}", message);
    }

    /// Wrong types and odd values in known keys: an error naming the key, never a panic.
    #[test]
    fn odd_values_in_known_keys_name_the_key(
        level in 3usize..8,
        field in any::<prop::sample::Index>(),
        value in prop_oneof![
            any::<bool>().prop_map(toml::Value::Boolean),
            any::<i64>().prop_map(toml::Value::Integer),
            any::<f64>().prop_map(toml::Value::Float),
            ".{0,12}".prop_map(toml::Value::String),
            duration_like().prop_map(toml::Value::String),
            prop::collection::vec(any::<i64>().prop_map(toml::Value::Integer), 0..3)
                .prop_map(toml::Value::Array),
        ],
    ) {
        let (parent, known) = level_keys(level);
        let name = known[field.index(known.len())];
        let mut doc = toml::Table::new();
        let mut place = &mut doc;
        for part in parent.split('.') {
            place = table(place, part);
        }
        place.insert(name.to_owned(), value);
        let text = toml::to_string(&doc).expect("a table serializes");
        if let Err(error) = Config::from_toml_str(&text) {
            let key = named_key(&error).unwrap_or_default().to_owned();
            prop_assert!(key.starts_with(&format!("{parent}.")), "{}", error);
            prop_assert!(error.to_string().contains(&key));
        }
    }

    /// Random `BANDEJA_` variable sets (and others, which are ignored): a configuration or
    /// an error naming one of the variables (or a validated key), never a panic.
    #[test]
    fn env_loader_never_panics(vars in prop::collection::btree_map(
        prop_oneof![
            prop::sample::select(known_env_vars()),
            "BANDEJA_[A-Z_]{0,20}",
            "[A-Z_]{1,10}",
        ],
        prop_oneof![duration_like(), ".{0,10}", "[0-9-]{1,6}", Just(String::new())],
        0..6,
    )) {
        let names: Vec<String> = vars.keys().cloned().collect();
        match Config::default().apply_env(vars) {
            Ok(config) => {
                prop_assert_eq!(config.validate().ok(), Some(()));
                let ours = names.iter().filter(|n| n.starts_with("BANDEJA_"));
                for name in ours {
                    prop_assert!(
                        known_env_vars().contains(name)
                            || bandeja_core::config::RESERVED_ENV_VARS.contains(&name.as_str()),
                        "{} was accepted", name
                    );
                }
            }
            Err(error) => {
                let key = named_key(&error).unwrap_or_default().to_owned();
                let validated = key.contains('.') || key == "stuck-threshold";
                prop_assert!(names.contains(&key) || validated, "{}", error);
            }
        }
    }

    /// An unknown `BANDEJA_` variable among known ones: an error naming that variable.
    #[test]
    fn unknown_env_vars_are_named(
        known in prop::collection::vec(env_entry(), 0..6),
        unknown in unknown_env_var(),
        value in ".{0,8}",
    ) {
        let mut vars: BTreeMap<String, String> = known.into_iter().collect();
        vars.insert(unknown.clone(), value);
        let error = Config::default().apply_env(vars).expect_err("an unknown variable is an error");
        let named = error.kind() == ConfigErrorKind::UnknownKey && error.key() == Some(unknown.as_str());
        prop_assert!(named, "expected `{}`: {}", unknown, error);
        prop_assert!(error.full_message().contains("expected one of"), "{}", error);
    }

    /// Any text as a tenant id: accepted exactly when it is 1 to 128 bytes without control
    /// characters, and then kept verbatim (SQL metacharacters are data); through serde too.
    #[test]
    fn tenant_ids_are_checked_and_kept_verbatim(text in prop_oneof![
        any::<String>(),
        ".{120,135}",
        "[a-z' \";%_\\\\-]{1,20}",
        Just("x'; DROP TABLE outbox_events; --".to_owned()),
    ]) {
        let valid = !text.is_empty() && text.len() <= 128 && !text.chars().any(char::is_control);
        let json = Value::from(text.clone());
        match TenantId::new(&text) {
            Ok(tenant) => {
                prop_assert!(valid);
                prop_assert_eq!(tenant.as_str(), text.as_str());
                prop_assert_eq!(tenant.to_string(), text.clone());
                let back: TenantId = serde_json::from_value(serde_json::to_value(&tenant).expect("serialize"))
                    .expect("deserialize");
                prop_assert_eq!(back, tenant);
            }
            Err(error) => {
                prop_assert!(!valid);
                prop_assert!(error.to_string().contains("invalid tenant id"), "{}", error);
                let hint = error.hint().unwrap_or_default();
                prop_assert!(hint.contains("128 bytes"), "{}: {}", error, hint);
                prop_assert!(serde_json::from_value::<TenantId>(json).is_err());
            }
        }
    }
}
