//! `bandeja messages show ID`: every row holding one message id, in full: payload
//! (pretty-printed), headers, attempts, last error; its rows in the archive tables too,
//! marked, with when they were archived and, for a discarded row, by whom and why.

use std::io::{self, Write};

use bandeja_core::admin::{archive_table, Admin, AttemptView, MessageView};
use bandeja_core::{MessageId, MessageStatus};

use crate::cli::ShowArgs;
use crate::error::CliError;
use crate::output;
use crate::view::{payload_value, RowJson};

/// The JSON document.
#[derive(serde::Serialize)]
struct Shown<'a> {
    /// The message id.
    id: MessageId,
    /// Its rows: the outbox row, then one inbox row per subscriber (each box's archived
    /// rows after its live ones, with `archived_at` set).
    rows: Vec<RowJson<'a>>,
    /// Every failed attempt kept for its rows, oldest first (at most
    /// [`MAX_ATTEMPTS_KEPT`](bandeja_core::admin::MAX_ATTEMPTS_KEPT) per row).
    attempts: &'a [AttemptView],
}

/// Prints the rows of the message, or fails with "not found" (exit code 3).
pub(crate) async fn run<S: Admin>(store: &S, args: &ShowArgs, json: bool) -> Result<(), CliError> {
    let rows = store.show(args.id).await?;
    if rows.is_empty() {
        return Err(CliError::NotFound(format!(
            "no row of any box holds message {}",
            args.id
        )));
    }
    let attempts = store.attempts(args.id).await?;
    if json {
        return output::json(&Shown {
            id: args.id,
            rows: rows.iter().map(|r| RowJson::new(r, true)).collect(),
            attempts: &attempts,
        });
    }
    let mut out = io::stdout().lock();
    let first = &rows[0];
    write_message(&mut out, first)?;
    for row in &rows {
        writeln!(out)?;
        write_row(&mut out, row)?;
        let same = row.message.record.payload == first.message.record.payload
            && row.message.record.headers == first.message.record.headers;
        if !same {
            write_body(&mut out, row)?;
        }
    }
    write_attempts(&mut out, &attempts)?;
    out.flush()?;
    Ok(())
}

/// The failed attempts, oldest first: when, which row, which attempt, how it ended, why.
fn write_attempts(out: &mut impl Write, attempts: &[AttemptView]) -> Result<(), CliError> {
    if attempts.is_empty() {
        return Ok(());
    }
    writeln!(out)?;
    writeln!(out, "failed attempts (oldest first)")?;
    for a in attempts {
        let row = match &a.subscriber {
            Some(s) => format!("{} ({s})", a.box_kind),
            None => a.box_kind.to_string(),
        };
        writeln!(
            out,
            "  {}  {row}  attempt {}  {}  {}",
            output::instant(Some(a.at)),
            a.attempt,
            a.outcome.as_str(),
            a.error
        )?;
    }
    Ok(())
}

/// What every row of the message shares: type, tenant, keys, headers, payload.
fn write_message(out: &mut impl Write, row: &MessageView) -> Result<(), CliError> {
    let r = &row.message.record;
    writeln!(
        out,
        "message {} · {} v{}",
        r.id, r.message_type, r.schema_version
    )?;
    let mut fields: Vec<(&str, String)> = vec![
        ("tenant", r.tenant_id.to_string()),
        ("partition key", opt(r.partition_key.as_deref())),
    ];
    if r.aggregate_type.is_some() || r.aggregate_id.is_some() {
        fields.push((
            "aggregate",
            format!(
                "{} {}",
                opt(r.aggregate_type.as_deref()),
                opt(r.aggregate_id.as_deref())
            ),
        ));
    }
    if let Some(service) = &r.target_service {
        let tenant = |t: &Option<bandeja_core::TenantId>| {
            t.as_ref()
                .map_or_else(|| "-".to_owned(), ToString::to_string)
        };
        fields.push((
            "command",
            format!(
                "from tenant {} to service {service} of tenant {}",
                tenant(&r.source_tenant_id),
                tenant(&r.target_tenant_id)
            ),
        ));
    }
    fields.push(("occurred at", output::instant(Some(r.occurred_at))));
    write_fields(out, &fields)?;
    write_body(out, row)
}

/// One row: where it is, its status, attempts (failed attempts and lease takeovers apart),
/// times and last error.
fn write_row(out: &mut impl Write, row: &MessageView) -> Result<(), CliError> {
    let m = &row.message;
    let heading = match &m.subscriber {
        Some(subscriber) => format!("{} · subscriber {subscriber}", m.box_kind),
        None => m.box_kind.to_string(),
    };
    match row.archived_at {
        Some(_) => writeln!(out, "== {heading} (seq {}) · ARCHIVED", m.seq)?,
        None => writeln!(out, "== {heading} (seq {})", m.seq)?,
    }
    let mut attempts = format!("retry count {}, takeovers {}", m.retry_count, m.takeovers);
    if m.box_kind.is_inbox() {
        attempts.push_str(&format!(", delivered {} time(s)", m.delivery_count));
    }
    if row.resubmitted_count > 0 {
        attempts.push_str(&format!(
            ", resubmitted {} time(s), last at {}",
            row.resubmitted_count,
            output::instant(row.resubmitted_at)
        ));
    }
    let mut fields: Vec<(&str, String)> = vec![("status", m.status.to_string())];
    if let Some(at) = row.archived_at {
        let table = archive_table(m.box_kind);
        let at = output::instant(Some(at));
        fields.push(("archived at", format!("{at} (in {table})")));
    }
    if let Some(by) = &row.discarded_by {
        fields.push(("discarded by", by.clone()));
    }
    if let Some(reason) = &row.discard_reason {
        fields.push(("discard reason", reason.clone()));
    }
    fields.extend([
        ("attempts", attempts),
        ("created at", output::instant(Some(row.created_at))),
    ]);
    if m.box_kind.is_inbox() {
        fields.push(("received at", output::instant(row.received_at)));
    }
    if m.status == MessageStatus::Pending {
        fields.push(("next attempt", output::instant(row.next_attempt_at)));
    }
    if let Some(by) = &row.locked_by {
        fields.push((
            "locked by",
            format!("{by} until {}", output::instant(row.locked_until)),
        ));
    }
    fields.extend([
        ("completed at", output::instant(row.completed_at)),
        ("last modified", output::instant(Some(row.last_modified_at))),
        ("last error", opt(m.last_error.as_deref())),
    ]);
    Ok(write_fields(out, &fields)?)
}

/// Headers and payload, pretty-printed.
fn write_body(out: &mut impl Write, row: &MessageView) -> Result<(), CliError> {
    let r = &row.message.record;
    writeln!(out, "headers")?;
    write_indented(out, &serde_json::to_string_pretty(&r.headers)?)?;
    writeln!(out, "payload")?;
    write_indented(
        out,
        &serde_json::to_string_pretty(&payload_value(&r.payload))?,
    )?;
    Ok(())
}

fn write_fields(out: &mut impl Write, fields: &[(&str, String)]) -> io::Result<()> {
    for (name, value) in fields {
        // Continuation lines of a multi-line value (a stack of errors) line up with the first.
        let value = value.replace('\n', &format!("\n{:15}", ""));
        writeln!(out, "{name:<14} {value}")?;
    }
    Ok(())
}

fn opt(value: Option<&str>) -> String {
    value.unwrap_or("-").to_owned()
}

fn write_indented(out: &mut impl Write, text: &str) -> io::Result<()> {
    for line in text.lines() {
        writeln!(out, "  {line}")?;
    }
    Ok(())
}
