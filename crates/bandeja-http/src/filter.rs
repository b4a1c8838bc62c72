//! Query strings into typed values: [`MessageFilter`], [`Page`], purge horizons. Each
//! value is parsed (box and status into closed enums, ids into UUIDs, times into instants)
//! and travels to the store as data, never as SQL text. A bad value, an unknown parameter
//! or a repeated one is a 400 that names the parameter.

use std::collections::BTreeMap;

use bandeja_core::admin::listing::Cursor;
use bandeja_core::admin::MessageFilter;
use bandeja_core::{BoxKind, MessageId, MessageStatus, TenantId};
use chrono::{DateTime, NaiveDate, Utc};

use crate::error::ApiError;

/// The filter parameters every listing and bulk action accepts.
pub(crate) const FILTER_KEYS: &[&str] = &[
    "box",
    "status",
    "tenant",
    "type",
    "subscriber",
    "since",
    "until",
    "id",
    "correlation_id",
    "archived",
];

/// Largest page the HTTP listing returns.
pub(crate) const MAX_LIMIT: usize = 1000;

/// The parameters of one request, checked against the keys an endpoint accepts.
pub(crate) struct Params(BTreeMap<String, String>);

impl Params {
    /// Checks `pairs`: every key among `allowed`, none repeated.
    pub(crate) fn new(
        pairs: Vec<(String, String)>,
        allowed: &[&[&str]],
    ) -> Result<Params, ApiError> {
        let mut map = BTreeMap::new();
        for (key, value) in pairs {
            if !allowed.iter().any(|keys| keys.contains(&key.as_str())) {
                let expected: Vec<&str> = allowed.iter().flat_map(|k| k.iter().copied()).collect();
                return Err(bad(format!(
                    "unknown query parameter `{key}`; expected one of: {}",
                    expected.join(", ")
                )));
            }
            if map.insert(key.clone(), value).is_some() {
                return Err(bad(format!(
                    "query parameter `{key}` is given more than once"
                )));
            }
        }
        Ok(Params(map))
    }

    /// The value of `key`, if given and not blank.
    pub(crate) fn get(&self, key: &str) -> Option<&str> {
        self.0.get(key).map(|v| v.trim()).filter(|v| !v.is_empty())
    }

    /// The message filter these parameters describe.
    pub(crate) fn filter(&self) -> Result<MessageFilter, ApiError> {
        let filter = MessageFilter {
            box_kind: self.parse("box", |v| v.parse::<BoxKind>().map_err(|e| e.to_string()))?,
            status: self.parse("status", |v| {
                v.to_ascii_uppercase()
                    .parse::<MessageStatus>()
                    .map_err(|e| e.to_string())
            })?,
            tenant: self.parse("tenant", |v| {
                TenantId::new(v)
                    .map(|t| t.as_str().to_owned())
                    .map_err(|e| match e.hint() {
                        Some(hint) => format!("{e}: {hint}"),
                        None => e.to_string(),
                    })
            })?,
            message_type: self.parse("type", |v| text(v, 255))?,
            subscriber: self.parse("subscriber", |v| text(v, 128))?,
            since: self.parse("since", instant)?,
            until: self.parse("until", instant)?,
            id: self.parse("id", message_id)?,
            correlation_id: self.parse("correlation_id", |v| text(v, 255))?,
            archived: self.flag("archived")?,
            ..MessageFilter::default()
        };
        if let (Some(since), Some(until)) = (filter.since, filter.until) {
            if since >= until {
                return Err(bad(format!(
                    "`since` ({since}) must be before `until` ({until})"
                )));
            }
        }
        Ok(filter)
    }

    /// The filter of an action on rows (retry, replay, discard): [`Params::filter`], with
    /// `archived=true` refused — archived rows are listed, not acted on.
    pub(crate) fn action_filter(&self) -> Result<MessageFilter, ApiError> {
        let filter = self.filter()?;
        if filter.archived {
            return Err(bad(
                "`archived=true` lists the archive tables; retry, replay and discard act on \
                 the rows in the boxes: leave `archived` out (to send archived outbox rows \
                 again, use POST /replay/outbox)"
                    .to_owned(),
            ));
        }
        Ok(filter)
    }

    /// A yes/no parameter: `true`/`false` (also `1`/`0`, `yes`/`no`); absent is `false`.
    pub(crate) fn flag(&self, key: &str) -> Result<bool, ApiError> {
        self.parse(key, |v| match v.to_ascii_lowercase().as_str() {
            "true" | "1" | "yes" => Ok(true),
            "false" | "0" | "no" => Ok(false),
            _ => Err("expected true or false".to_owned()),
        })
        .map(|flag| flag.unwrap_or(false))
    }

    /// The page: `limit` (1 to 1000, default 100) and where it starts: `cursor` (the
    /// `older` or `newer` of a previous page), or `before` (a row `seq`, with `box` only:
    /// seqs are per box).
    pub(crate) fn page(&self) -> Result<(usize, Option<Cursor>), ApiError> {
        let limit = self
            .parse("limit", |v| match v.parse::<usize>() {
                Ok(n) if (1..=MAX_LIMIT).contains(&n) => Ok(n),
                _ => Err(format!("expected a whole number from 1 to {MAX_LIMIT}")),
            })?
            .unwrap_or(100);
        let cursor = self.parse("cursor", |v| v.parse::<Cursor>().map_err(|e| e.to_string()))?;
        let before_seq = self.parse("before", |v| {
            v.parse::<i64>()
                .map_err(|_| "expected a row `seq` (a whole number)".to_owned())
        })?;
        let Some(before_seq) = before_seq else {
            return Ok((limit, cursor));
        };
        if cursor.is_some() {
            return Err(bad(
                "give `cursor` or `before`, not both (`cursor` pages across boxes)".to_owned(),
            ));
        }
        let Some(box_kind) = self.filter()?.box_kind else {
            return Err(bad(
                "`before` is a row `seq`, which counts per box: give `box` with it, or page \
                 with `cursor` (the `older` of the previous page)"
                    .to_owned(),
            ));
        };
        Ok((limit, Some(Cursor::older_than(box_kind, before_seq))))
    }

    /// The purge / archive horizon: `older_than` (a duration: `7d`, `P7D`) or
    /// `completed_before` (an instant); exactly one is required.
    pub(crate) fn horizon(&self) -> Result<DateTime<Utc>, ApiError> {
        let older_than = self.parse("older_than", |v| {
            let age = bandeja_core::config::parse_duration(v)?;
            ago(age)
        })?;
        let before = self.parse("completed_before", instant)?;
        match (older_than, before) {
            (Some(at), None) | (None, Some(at)) => Ok(at),
            (None, None) => Err(bad(
                "give `older_than` (a duration such as 7d or P7D) or `completed_before` (an instant)".to_owned(),
            )),
            (Some(_), Some(_)) => Err(bad(
                "give either `older_than` or `completed_before`, not both".to_owned(),
            )),
        }
    }

    pub(crate) fn parse<T>(
        &self,
        key: &str,
        parse: impl FnOnce(&str) -> Result<T, String>,
    ) -> Result<Option<T>, ApiError> {
        self.get(key)
            .map(|value| {
                parse(value)
                    .map_err(|why| bad(format!("bad `{key}` value `{}`: {why}", shorten(value))))
            })
            .transpose()
    }
}

fn bad(message: String) -> ApiError {
    ApiError::BadRequest(message)
}

/// A value echoed in an error, cut to a readable length.
fn shorten(value: &str) -> String {
    value.chars().take(80).collect()
}

fn text(value: &str, max: usize) -> Result<String, String> {
    if value.len() > max || value.chars().any(char::is_control) {
        return Err(format!(
            "expected at most {max} bytes without control characters"
        ));
    }
    Ok(value.to_owned())
}

/// A message id (a UUID).
pub(crate) fn message_id(value: &str) -> Result<MessageId, String> {
    value
        .parse::<MessageId>()
        .map_err(|_| "expected a message id (a UUID)".to_owned())
}

/// The message id of a `/messages/{id}/…` path, or a 400 saying why it is not one.
pub(crate) fn path_id(value: &str) -> Result<MessageId, ApiError> {
    message_id(value).map_err(|why| bad(format!("bad message id in the path: {why}")))
}

/// An instant: RFC 3339 (`2024-05-01T12:00:00Z`), a date (`2024-05-01`, midnight UTC), or
/// a duration meaning that long ago (`1h`, `PT30M`).
fn instant(value: &str) -> Result<DateTime<Utc>, String> {
    if let Ok(at) = DateTime::parse_from_rfc3339(value) {
        return Ok(at.with_timezone(&Utc));
    }
    if let Ok(date) = NaiveDate::parse_from_str(value, "%Y-%m-%d") {
        if let Some(midnight) = date.and_hms_opt(0, 0, 0) {
            return Ok(midnight.and_utc());
        }
    }
    match bandeja_core::config::parse_duration(value) {
        Ok(age) => ago(age),
        Err(_) => Err(
            "expected an RFC 3339 instant (2024-05-01T12:00:00Z), a date (2024-05-01) or a duration ago (1h, PT30M)"
                .to_owned(),
        ),
    }
}

fn ago(age: std::time::Duration) -> Result<DateTime<Utc>, String> {
    chrono::Duration::from_std(age)
        .ok()
        .and_then(|age| Utc::now().checked_sub_signed(age))
        .ok_or_else(|| "the duration is too long".to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn params(pairs: &[(&str, &str)]) -> Result<Params, ApiError> {
        let pairs = pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        Params::new(pairs, &[FILTER_KEYS, &["limit", "before", "cursor"]])
    }

    #[test]
    fn parses_every_filter_field() {
        let id = MessageId::new();
        let given = params(&[
            ("box", "inbox_events"),
            ("status", "failed"),
            ("tenant", "acme"),
            ("type", "shop.OrderPlaced"),
            ("subscriber", "billing"),
            ("since", "2024-05-01"),
            ("until", "2024-05-02T00:00:00Z"),
            ("id", &id.to_string()),
            ("limit", "20"),
            ("before", "99"),
        ])
        .unwrap();
        let filter = given.filter().unwrap();
        assert_eq!(filter.box_kind, Some(BoxKind::InboxEvents));
        assert_eq!(filter.status, Some(MessageStatus::Failed));
        assert_eq!(filter.tenant.as_deref(), Some("acme"));
        assert_eq!(filter.message_type.as_deref(), Some("shop.OrderPlaced"));
        assert_eq!(filter.subscriber.as_deref(), Some("billing"));
        assert_eq!(filter.id, Some(id));
        assert_eq!(
            filter.since.map(|s| s.to_rfc3339()),
            Some("2024-05-01T00:00:00+00:00".to_owned())
        );
        let (limit, cursor) = given.page().unwrap();
        assert_eq!(limit, 20);
        let cursor = cursor.expect("`before` with `box` is a cursor");
        assert_eq!(cursor.bound(BoxKind::InboxEvents), Some(99));
        assert_eq!(cursor.bound(BoxKind::OutboxEvents), None);
    }

    #[test]
    fn bad_values_name_their_parameter() {
        for (pairs, needle) in [
            (vec![("box", "outbox; DROP TABLE x")], "`box`"),
            (vec![("status", "DONE")], "`status`"),
            (vec![("id", "42")], "`id`"),
            (vec![("since", "yesterday")], "`since`"),
            (vec![("limit", "0")], "`limit`"),
            (
                vec![("since", "2024-05-02"), ("until", "2024-05-01")],
                "before",
            ),
        ] {
            let error = params(&pairs).and_then(|p| p.filter().and(p.page()));
            let message = match error {
                Err(ApiError::BadRequest(message)) => message,
                other => panic!("{pairs:?}: expected a 400, got {other:?}"),
            };
            assert!(message.contains(needle), "{message}");
        }
        assert!(matches!(
            params(&[("colour", "red")]),
            Err(ApiError::BadRequest(m)) if m.contains("`colour`")
        ));
        assert!(matches!(
            params(&[("box", "inbox_events"), ("box", "outbox_events")]),
            Err(ApiError::BadRequest(m)) if m.contains("more than once")
        ));
    }

    #[test]
    fn flags_are_true_or_false() {
        let p = Params::new(
            vec![
                ("all".into(), "TRUE".into()),
                ("dry_run".into(), "0".into()),
            ],
            &[&["all", "dry_run", "other"]],
        )
        .unwrap();
        assert!(p.flag("all").unwrap());
        assert!(!p.flag("dry_run").unwrap());
        assert!(!p.flag("other").unwrap(), "absent");
        let bad = Params::new(vec![("all".into(), "maybe".into())], &[&["all"]]).unwrap();
        assert!(matches!(bad.flag("all"), Err(ApiError::BadRequest(m)) if m.contains("`all`")));
    }

    #[test]
    fn the_purge_horizon_needs_exactly_one_form() {
        let p = Params::new(
            vec![("older_than".into(), "7d".into())],
            &[&["older_than", "completed_before"]],
        )
        .unwrap();
        let horizon = p.horizon().unwrap();
        assert!(horizon < Utc::now() - chrono::Duration::days(6));
        let none = Params::new(vec![], &[&["older_than"]]).unwrap();
        assert!(matches!(none.horizon(), Err(ApiError::BadRequest(_))));
    }
}
