//! W3C trace context (`traceparent`) for messages: written into the headers on emission,
//! continued when a message is handled, so one request's story can be followed across
//! services and hops.
//!
//! The current context is task-local: [`scope`] runs a future under a given context (an
//! incoming HTTP request's `traceparent`, say), and every handler runs under the context
//! of the message it handles. A message emitted inside a scope gets a child of the scope's
//! context (same trace id, new span id); outside any scope, a new trace.

use std::fmt;
use std::future::Future;

use crate::envelope::Headers;

tokio::task_local! {
    static CURRENT: TraceParent;
}

/// A W3C `traceparent`: version 00, a 128-bit trace id, a 64-bit parent (span) id, flags.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct TraceParent {
    /// The trace id (never zero).
    pub trace_id: u128,
    /// The id of the span this context points to (never zero).
    pub span_id: u64,
    /// Trace flags (`01`: sampled).
    pub flags: u8,
}

impl TraceParent {
    /// A new trace, sampled, with random ids.
    pub fn new_root() -> TraceParent {
        TraceParent {
            trace_id: nonzero_u128(),
            span_id: nonzero_u64(),
            flags: 1,
        }
    }

    /// A child context: the same trace and flags, a new span id.
    #[must_use]
    pub fn child(&self) -> TraceParent {
        TraceParent {
            span_id: nonzero_u64(),
            ..*self
        }
    }

    /// Parses a `traceparent` header value (version `00`, lowercase hex, non-zero ids).
    /// `None` when it is malformed.
    pub fn parse(value: &str) -> Option<TraceParent> {
        let bytes = value.trim().as_bytes();
        if bytes.len() != 55 || bytes[2] != b'-' || bytes[35] != b'-' || bytes[52] != b'-' {
            return None;
        }
        let text = value.trim();
        if &text[0..2] != "00" {
            return None;
        }
        let hex = |s: &str| {
            s.bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
        };
        let (trace, span, flags) = (&text[3..35], &text[36..52], &text[53..55]);
        if !(hex(trace) && hex(span) && hex(flags)) {
            return None;
        }
        let parsed = TraceParent {
            trace_id: u128::from_str_radix(trace, 16).ok()?,
            span_id: u64::from_str_radix(span, 16).ok()?,
            flags: u8::from_str_radix(flags, 16).ok()?,
        };
        (parsed.trace_id != 0 && parsed.span_id != 0).then_some(parsed)
    }

    /// The trace id as 32 lowercase hex digits.
    pub fn trace_id_hex(&self) -> String {
        format!("{:032x}", self.trace_id)
    }
}

impl fmt::Display for TraceParent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "00-{:032x}-{:016x}-{:02x}",
            self.trace_id, self.span_id, self.flags
        )
    }
}

fn nonzero_u128() -> u128 {
    loop {
        let id = rand::random::<u128>();
        if id != 0 {
            return id;
        }
    }
}

fn nonzero_u64() -> u64 {
    loop {
        let id = rand::random::<u64>();
        if id != 0 {
            return id;
        }
    }
}

/// Runs `future` with `context` as the current trace context: messages emitted inside it
/// continue that trace.
pub async fn scope<F: Future>(context: TraceParent, future: F) -> F::Output {
    CURRENT.scope(context, future).await
}

/// The current trace context, if the task runs inside [`scope`] (or a handler).
pub fn current() -> Option<TraceParent> {
    CURRENT.try_with(|context| *context).ok()
}

/// Gives headers without a (valid) `traceparent` one: a child of `parent`, else of the
/// current context, else a new trace. A valid one already set by the caller is kept.
pub(crate) fn stamp(headers: &mut Headers, parent: Option<TraceParent>) {
    if headers
        .traceparent
        .as_deref()
        .is_some_and(|value| TraceParent::parse(value).is_some())
    {
        return;
    }
    let context = parent
        .or_else(current)
        .map_or_else(TraceParent::new_root, |p| p.child());
    headers.traceparent = Some(context.to_string());
}

/// The context a handling runs under: a child of the message's `traceparent` (a new trace
/// when it has none or a malformed one).
pub(crate) fn for_handling(headers: &Headers) -> TraceParent {
    headers
        .traceparent
        .as_deref()
        .and_then(TraceParent::parse)
        .map_or_else(TraceParent::new_root, |p| p.child())
}

/// The trace id part of a `traceparent` value (empty when malformed), for span fields.
pub(crate) fn trace_id_of(headers: &Headers) -> &str {
    headers
        .traceparent
        .as_deref()
        .filter(|value| value.len() == 55)
        .and_then(|value| value.get(3..35))
        .unwrap_or("")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_and_parses_back() {
        let root = TraceParent::new_root();
        let text = root.to_string();
        assert_eq!(text.len(), 55);
        assert!(text.starts_with("00-"));
        assert_eq!(TraceParent::parse(&text), Some(root));
        let child = root.child();
        assert_eq!(child.trace_id, root.trace_id);
        assert_ne!(child.span_id, root.span_id);
    }

    #[test]
    fn rejects_malformed_values() {
        for bad in [
            "",
            "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331",
            "01-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
            "00-0AF7651916CD43DD8448EB211C80319C-b7ad6b7169203331-01",
            "00-00000000000000000000000000000000-b7ad6b7169203331-01",
            "00-0af7651916cd43dd8448eb211c80319c-0000000000000000-01",
            "00-0af7651916cd43dd8448eb211c80319c-b7ad6b716920333x-01",
        ] {
            assert_eq!(TraceParent::parse(bad), None, "{bad}");
        }
        let good = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";
        let parsed = TraceParent::parse(good).map(|p| p.to_string());
        assert_eq!(parsed.as_deref(), Some(good));
    }

    #[tokio::test]
    async fn stamping_continues_the_current_trace_and_keeps_a_set_one() {
        let mut fresh = Headers::default();
        stamp(&mut fresh, None);
        assert!(fresh
            .traceparent
            .as_deref()
            .and_then(TraceParent::parse)
            .is_some());

        let outer = TraceParent::new_root();
        let mut inside = Headers::default();
        scope(outer, async { stamp(&mut inside, None) }).await;
        let stamped = inside.traceparent.as_deref().and_then(TraceParent::parse);
        assert_eq!(stamped.map(|p| p.trace_id), Some(outer.trace_id));
        assert_ne!(stamped.map(|p| p.span_id), Some(outer.span_id));

        let mut set = Headers {
            traceparent: Some(outer.to_string()),
            ..Headers::default()
        };
        stamp(&mut set, None);
        assert_eq!(set.traceparent, Some(outer.to_string()));
        assert_eq!(trace_id_of(&set), outer.trace_id_hex());
    }
}
