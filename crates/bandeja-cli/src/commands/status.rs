//! `bandeja status`: the counters of the four boxes (what `GET /boxes` shows) as a table,
//! then the subscriptions whose pending rows no live process runs (unattended: what makes
//! `/health` DOWN; waiting).

use std::io::{self, Write};

use bandeja_core::admin::{Admin, Attendance, BoxCounters, SubscriberState};
use bandeja_core::config::format_duration;

use crate::cli::StatusArgs;
use crate::error::CliError;
use crate::output;
use crate::table::Table;

/// The JSON document.
#[derive(serde::Serialize)]
struct Status<'a> {
    /// The threshold the `stuck` counters use (ISO-8601).
    stuck_threshold: String,
    /// One entry per box (or per box and tenant).
    boxes: &'a [BoxCounters],
    /// The subscriptions that need attention (`null` when they cannot be read).
    subscriptions: Option<Attention>,
}

/// Subscriptions whose pending rows no live process runs: unattended for longer than the
/// stuck threshold (what makes `/health` DOWN), or waiting.
#[derive(serde::Serialize)]
struct Attention {
    unattended: Vec<SubscriberState>,
    waiting: Vec<SubscriberState>,
}

/// Prints the counters.
pub(crate) async fn run<S: Admin>(
    store: &S,
    args: &StatusArgs,
    json: bool,
) -> Result<(), CliError> {
    if args.check {
        return crate::commands::check::run(store, args, json).await;
    }
    let counters = store.counters(args.stuck_threshold, args.by_tenant).await?;
    let threshold = format_duration(args.stuck_threshold);
    let attention =
        crate::commands::subscribers::needing_attention(store, args.stuck_threshold, args.live_for)
            .await
            .map(|states| {
                let (unattended, waiting) = states
                    .into_iter()
                    .partition(|s| s.state == Attendance::Unattended);
                Attention {
                    unattended,
                    waiting,
                }
            });
    if json {
        return output::json(&Status {
            stuck_threshold: threshold,
            boxes: &counters,
            subscriptions: attention,
        });
    }
    let mut out = io::stdout().lock();
    table(&counters, args.by_tenant).write(&mut out)?;
    if args.by_tenant && counters.is_empty() {
        writeln!(out, "(no tenant has PENDING, PROCESSING or FAILED rows)")?;
    }
    writeln!(
        out,
        "\nstuck: PENDING and unchanged for longer than {threshold}; times in UTC\n\
         taken over: PENDING, PROCESSING or FAILED rows a worker took over after the one \
         holding them stopped"
    )?;
    if let Some(attention) = &attention {
        let (unattended, waiting) = (&attention.unattended, &attention.waiting);
        if !unattended.is_empty() || !waiting.is_empty() {
            writeln!(out)?;
        }
        for (label, states) in [("UNATTENDED", unattended), ("waiting", waiting)] {
            for state in states {
                let reason = state.reason.as_deref().unwrap_or_default();
                writeln!(out, "{label}: {reason}")?;
            }
        }
    }
    out.flush()?;
    Ok(())
}

fn table(counters: &[BoxCounters], by_tenant: bool) -> Table {
    let mut header = vec!["BOX"];
    if by_tenant {
        header.push("TENANT");
    }
    let first_number = header.len();
    header.extend([
        "PENDING",
        "PROCESSING",
        "FAILED",
        "STUCK",
        "TAKEN OVER",
        "OLDEST PENDING",
        "LAST PROCESSED",
    ]);
    let numbers: Vec<usize> = (first_number..first_number + 5).collect();
    let mut table = Table::new(&header).right_align(&numbers);
    for c in counters {
        let mut row = vec![c.box_kind.to_string()];
        if by_tenant {
            row.push(c.tenant.clone().unwrap_or_else(|| "-".to_owned()));
        }
        row.extend([
            c.pending.to_string(),
            c.processing.to_string(),
            c.failed.to_string(),
            c.stuck.to_string(),
            c.taken_over.to_string(),
            output::instant(c.oldest_pending_at),
            output::instant(c.last_processed_at),
        ]);
        table.push(row);
    }
    table
}
