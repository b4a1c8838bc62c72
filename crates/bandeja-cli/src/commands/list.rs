//! `bandeja messages list`: the rows matching the filters, newest first.

use std::io::{self, Write};

use bandeja_core::admin::{Admin, MessageView, Page};

use crate::cli::ListArgs;
use crate::error::CliError;
use crate::output;
use crate::table::Table;
use crate::view::RowJson;

/// Widest last error shown in the table (`messages show` has it whole).
const ERROR_WIDTH: usize = 60;

/// The JSON document.
#[derive(serde::Serialize)]
struct Listing<'a> {
    /// How many rows follow.
    count: usize,
    /// The rows, newest first.
    messages: Vec<RowJson<'a>>,
}

/// Prints the rows.
pub(crate) async fn run<S: Admin>(store: &S, args: &ListArgs, json: bool) -> Result<(), CliError> {
    let filter = args.filters.to_filter(args.status, None);
    let limit = usize::try_from(args.limit).unwrap_or(usize::MAX);
    let page = Page {
        limit,
        before_seq: None,
    };
    // One page per box: merge them, newest first, and keep `limit` rows overall.
    let mut rows = store.list(&filter, page).await?;
    rows.sort_by_key(|row| std::cmp::Reverse(row.created_at));
    rows.truncate(limit);
    if json {
        return output::json(&Listing {
            count: rows.len(),
            messages: rows.iter().map(|r| RowJson::new(r, false)).collect(),
        });
    }
    let mut out = io::stdout().lock();
    if rows.is_empty() {
        writeln!(out, "no messages match")?;
    } else {
        table(&rows).write(&mut out)?;
    }
    out.flush()?;
    Ok(())
}

fn table(rows: &[MessageView]) -> Table {
    let mut table = Table::new(&[
        "CREATED",
        "BOX",
        "ID",
        "SUBSCRIBER",
        "STATUS",
        "TENANT",
        "TYPE",
        "RETRIES",
        "TAKEOVERS",
        "LAST ERROR",
    ])
    .right_align(&[7, 8]);
    for row in rows {
        let m = &row.message;
        table.push(vec![
            output::instant(Some(row.created_at)),
            m.box_kind.to_string(),
            m.record.id.to_string(),
            m.subscriber.clone().unwrap_or_else(|| "-".to_owned()),
            m.status.to_string(),
            m.record.tenant_id.to_string(),
            m.record.message_type.clone(),
            m.retry_count.to_string(),
            m.takeovers.to_string(),
            m.last_error
                .as_deref()
                .map_or_else(|| "-".to_owned(), |e| output::shorten(e, ERROR_WIDTH)),
        ]);
    }
    table
}
