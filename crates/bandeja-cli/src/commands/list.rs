//! `bandeja messages list`: the rows matching the filters, newest first, one page at a time
//! across the boxes ([`list_page`]: one ordering, one cursor). When more rows match than
//! the page shows, a line after the table says how many and prints the commands that show
//! the older and newer pages (`--before` / `--after` with a cursor).

use std::io::{self, Write};

use bandeja_core::admin::listing::{list_page, Cursor, Listed};
use bandeja_core::admin::{Admin, MessageFilter, MessageView};
use chrono::SecondsFormat;

use crate::cli::ListArgs;
use crate::error::CliError;
use crate::output;
use crate::table::Table;
use crate::view::RowJson;

/// Widest last error shown in the table (`messages show` has it whole).
const ERROR_WIDTH: usize = 60;

/// The default of `--limit`, left out of the commands printed for the next pages.
const DEFAULT_LIMIT: u32 = 50;

/// The JSON document.
#[derive(serde::Serialize)]
struct Listing<'a> {
    /// How many rows follow.
    count: usize,
    /// How many rows match the filters in all (every page).
    total: u64,
    /// The cursor of the next, older page (`--before`), if there is one.
    older: Option<String>,
    /// The cursor of the previous, newer page (`--after`), if there is one.
    newer: Option<String>,
    /// The rows, newest first.
    messages: Vec<RowJson<'a>>,
}

/// Prints one page of rows, and where the others are.
pub(crate) async fn run<S: Admin>(store: &S, args: &ListArgs, json: bool) -> Result<(), CliError> {
    let filter = MessageFilter {
        archived: args.archived,
        ..args.filters.to_filter(args.status, None)
    };
    let limit = usize::try_from(args.limit).unwrap_or(usize::MAX);
    let page = list_page(store, &filter, limit, args.before.or(args.after)).await?;
    let total = store.count(&filter).await?;
    if json {
        return output::json(&Listing {
            count: page.rows.len(),
            total,
            older: page.older.map(|c| c.to_string()),
            newer: page.newer.map(|c| c.to_string()),
            messages: page.rows.iter().map(|r| RowJson::new(r, false)).collect(),
        });
    }
    let mut out = io::stdout().lock();
    if page.rows.is_empty() {
        writeln!(out, "no messages match")?;
    } else {
        table(&page.rows, args.archived).write(&mut out)?;
    }
    if let Some(line) = more(args, &page, total) {
        writeln!(out, "{line}")?;
    }
    out.flush()?;
    Ok(())
}

/// The line after the table when the page is not everything that matches: `showing 50 of
/// 138 (newest first); older: bandeja messages list … --before <cursor>` (and `newer: …`
/// from the second page on).
fn more(args: &ListArgs, page: &Listed, total: u64) -> Option<String> {
    if page.older.is_none() && page.newer.is_none() {
        return None;
    }
    let mut line = format!("showing {} of {total} (newest first)", page.rows.len());
    if let Some(older) = page.older {
        line.push_str(&format!("; older: {}", command(args, "--before", older)));
    }
    if let Some(newer) = page.newer {
        line.push_str(&format!("; newer: {}", command(args, "--after", newer)));
    }
    Some(line)
}

/// `bandeja messages list` with this listing's filters, then `option cursor`. Relative
/// `--since`/`--until` are written as the instants they meant, so every page has the same
/// window. Global options (`--database`, `--config`) are left out.
fn command(args: &ListArgs, option: &str, cursor: Cursor) -> String {
    let f = &args.filters;
    let mut words = vec!["bandeja messages list".to_owned()];
    if args.archived {
        words.push("--archived".to_owned());
    }
    let mut push = |name: &str, value: Option<String>| {
        if let Some(value) = value {
            words.push(format!("--{name} {}", quote(&value)));
        }
    };
    push(
        "status",
        args.status.map(|s| s.to_string().to_ascii_lowercase()),
    );
    push("box", f.box_kind.map(|b| b.to_string()));
    push("tenant", f.tenant.clone());
    push("type", f.message_type.clone());
    push("subscriber", f.subscriber.clone());
    let instant =
        |at: chrono::DateTime<chrono::Utc>| at.to_rfc3339_opts(SecondsFormat::AutoSi, true);
    push("since", f.since.map(instant));
    push("until", f.until.map(instant));
    push(
        "limit",
        (args.limit != DEFAULT_LIMIT).then(|| args.limit.to_string()),
    );
    words.push(format!("{option} {cursor}"));
    words.join(" ")
}

/// `value` as one shell word: as it is when it is plain, in single quotes otherwise.
fn quote(value: &str) -> String {
    let plain = !value.is_empty()
        && value
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_.:/+@%=,".contains(c));
    if plain {
        value.to_owned()
    } else {
        format!("'{}'", value.replace('\'', r"'\''"))
    }
}

/// The table; listing the archive, with when each row was archived and, for a discarded
/// one, by whom and why.
fn table(rows: &[MessageView], archived: bool) -> Table {
    let mut header = vec![
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
    ];
    if archived {
        header.extend(["ARCHIVED", "DISCARDED BY", "REASON"]);
    }
    let mut table = Table::new(&header).right_align(&[7, 8]);
    for row in rows {
        let m = &row.message;
        let mut cells = vec![
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
        ];
        if archived {
            let or_dash = |text: &Option<String>| {
                text.as_deref()
                    .map_or_else(|| "-".to_owned(), |t| output::shorten(t, ERROR_WIDTH))
            };
            cells.extend([
                output::instant(row.archived_at),
                or_dash(&row.discarded_by),
                or_dash(&row.discard_reason),
            ]);
        }
        table.push(cells);
    }
    table
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_are_quoted_only_when_the_shell_needs_it() {
        assert_eq!(quote("shop.OrderPlaced"), "shop.OrderPlaced");
        assert_eq!(quote("2025-06-01T12:00:00Z"), "2025-06-01T12:00:00Z");
        assert_eq!(quote("acme corp"), "'acme corp'");
        assert_eq!(quote("o'neil"), r"'o'\''neil'");
        assert_eq!(quote(""), "''");
    }
}
