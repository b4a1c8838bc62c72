//! `messages list` paging, checked the way an operator pages: run the command, read the
//! line after the table, run the command it prints. Shared by the SQLite and PostgreSQL
//! tests.

use std::collections::HashSet;

use bandeja_conformance::fixtures::Ping;
use bandeja_core::store::Delivery;
use bandeja_core::{Event, MessageKind, MessageRecord, Store, TenantId};

use super::{listed, run_on};

/// How many command rows [`add_commands`] writes: this many in the commands outbox and
/// this many in the commands inbox.
pub(crate) const COMMANDS: usize = 2;

/// Writes [`COMMANDS`] PENDING rows into `outbox_commands` and as many into
/// `inbox_commands` (subscriber `shipping`), so a listing spans all four boxes.
pub(crate) async fn add_commands<S: Store>(store: &S) {
    let command = |n: u64| {
        let event = Event::new("ShipOrder", format!("c{n}"), Ping { n });
        let mut record = MessageRecord::from_event(&event).expect("a valid record");
        record.kind = MessageKind::Command;
        record.tenant_id = TenantId::default_tenant();
        record.source_tenant_id = Some(TenantId::default_tenant());
        record.target_tenant_id = Some(TenantId::default_tenant());
        record.target_service = Some("shipping".to_owned());
        record
    };
    let outgoing: Vec<MessageRecord> = (0..COMMANDS as u64).map(command).collect();
    let mut tx = store.begin().await.expect("begin");
    store
        .insert_outbox(&mut *tx, MessageKind::Command, &outgoing)
        .await
        .expect("insert commands");
    store.commit(tx).await.expect("commit");
    let subscribers = ["shipping".to_owned()];
    for n in 0..COMMANDS as u64 {
        let record = command(100 + n);
        let delivery = Delivery {
            record: &record,
            subscribers: &subscribers,
        };
        store
            .receive(MessageKind::Command, &[delivery])
            .await
            .expect("receive a command");
    }
}

/// A row's identity across boxes: `box/id/subscriber`.
fn key(row: &serde_json::Value) -> String {
    format!(
        "{}/{}/{}",
        row["box"].as_str().unwrap_or_default(),
        row["id"].as_str().unwrap_or_default(),
        row["subscriber"].as_str().unwrap_or_default()
    )
}

/// The rows of a text page (`box/id/subscriber`, subscriber empty for `-`) and the line
/// after the table, if any.
fn text_page(stdout: &str) -> (Vec<String>, Option<String>) {
    let mut rows = Vec::new();
    let mut more = None;
    for line in stdout.lines().skip(1) {
        if line.starts_with("showing ") {
            more = Some(line.to_owned());
            continue;
        }
        let cells: Vec<&str> = line.split_whitespace().collect();
        assert!(cells.len() >= 4, "a table row: {line}\n{stdout}");
        let subscriber = if cells[3] == "-" { "" } else { cells[3] };
        rows.push(format!("{}/{}/{subscriber}", cells[1], cells[2]));
    }
    (rows, more)
}

/// The arguments of the command printed after `label: ` in `line`, without `bandeja`.
fn printed_command(line: &str, label: &str) -> Option<Vec<String>> {
    let start = line.find(&format!("{label}: bandeja "))? + label.len() + ": bandeja ".len();
    let rest = &line[start..];
    let end = rest.find("; ").unwrap_or(rest.len());
    Some(rest[..end].split_whitespace().map(str::to_owned).collect())
}

/// Pages through `messages list <filter> --limit <limit>` in text, following the printed
/// "older:" commands to the end, then walks back with the "newer:" ones, and checks: each
/// page holds exactly `limit` rows but the last, the line says "showing N of TOTAL", every
/// row `messages list --limit 9999` lists is reached exactly once, and walking back gives
/// the same pages.
pub(crate) fn assert_text_pages_reach_every_row(database: &[&str], filter: &[&str], limit: usize) {
    let everything: Vec<String> = listed(database, &[filter, &["--limit", "9999"]].concat())
        .iter()
        .map(key)
        .collect();
    let total = everything.len();
    assert!(
        total > limit,
        "the walk needs several pages: {everything:?}"
    );
    let limit_text = limit.to_string();
    let mut args: Vec<String> = ["messages", "list"]
        .iter()
        .chain(filter)
        .chain(&["--limit", limit_text.as_str()])
        .map(|s| (*s).to_owned())
        .collect();
    let mut pages: Vec<(Vec<String>, Vec<String>)> = Vec::new();
    loop {
        let argv: Vec<&str> = args.iter().map(String::as_str).collect();
        let run = run_on(database, &argv).expect_code(0);
        let (rows, more) = text_page(&run.stdout);
        let more = more.unwrap_or_else(|| panic!("a page of {total} says so: {run:#?}"));
        let seen: usize = pages.iter().map(|(_, rows)| rows.len()).sum();
        let expected = (total - seen).min(limit);
        assert_eq!(
            rows.len(),
            expected,
            "exactly `limit` rows a page: {run:#?}"
        );
        assert!(
            more.starts_with(&format!("showing {expected} of {total} (newest first)")),
            "{more}"
        );
        pages.push((args.clone(), rows));
        match printed_command(&more, "older") {
            Some(next) => {
                assert!(
                    next.windows(2)
                        .any(|w| w[0] == "--limit" && w[1] == limit_text),
                    "the printed command keeps --limit: {more}"
                );
                for word in filter {
                    assert!(next.iter().any(|w| w == word), "keeps `{word}`: {more}");
                }
                args = next;
            }
            None => break,
        }
        assert!(pages.len() <= total, "the walk ends");
    }
    let reached: Vec<&String> = pages.iter().flat_map(|(_, rows)| rows).collect();
    let distinct: HashSet<&&String> = reached.iter().collect();
    assert_eq!(reached.len(), total, "every row once: {pages:?}");
    assert_eq!(distinct.len(), total, "no row twice: {pages:?}");
    let wanted: HashSet<&String> = everything.iter().collect();
    assert_eq!(
        distinct.into_iter().copied().collect::<HashSet<_>>(),
        wanted,
        "the pages hold the rows the listing has"
    );
    // Back: the "newer:" command of each page lists the page before it.
    for n in (1..pages.len()).rev() {
        let argv: Vec<&str> = pages[n].0.iter().map(String::as_str).collect();
        let run = run_on(database, &argv).expect_code(0);
        let (_, more) = text_page(&run.stdout);
        let more = more.expect("the line");
        let back = printed_command(&more, "newer")
            .unwrap_or_else(|| panic!("page {n} links back: {more}"));
        assert!(back.iter().any(|w| w == "--after"), "{more}");
        let argv: Vec<&str> = back.iter().map(String::as_str).collect();
        let run = run_on(database, &argv).expect_code(0);
        assert_eq!(
            text_page(&run.stdout).0,
            pages[n - 1].1,
            "page {n} leads back"
        );
    }
}

/// The JSON form of the same walk: `total`, `older`, `newer` and `count`.
pub(crate) fn assert_json_pages_reach_every_row(database: &[&str], limit: usize) {
    let limit_text = limit.to_string();
    let page = |cursor: Option<(&str, &str)>| {
        let mut args = vec!["messages", "list", "--json", "--limit", limit_text.as_str()];
        if let Some((option, value)) = cursor {
            args.extend([option, value]);
        }
        run_on(database, &args).expect_code(0).json()
    };
    let first = page(None);
    let total = usize::try_from(first["total"].as_u64().expect("total")).expect("a count");
    assert!(
        first["newer"].is_null(),
        "the first page has no newer: {first:#}"
    );
    let mut seen: Vec<String> = Vec::new();
    let mut current = first;
    loop {
        let rows = current["messages"].as_array().expect("messages").clone();
        assert_eq!(current["count"].as_u64(), Some(rows.len() as u64));
        assert_eq!(rows.len(), (total - seen.len()).min(limit), "{current:#}");
        assert_eq!(current["total"].as_u64(), Some(total as u64));
        seen.extend(rows.iter().map(key));
        match current["older"].as_str() {
            Some(cursor) => {
                assert!(cursor.starts_with("o."), "{cursor}");
                let next = page(Some(("--before", cursor)));
                let newer = next["newer"].as_str().expect("a later page links back");
                assert!(newer.starts_with("n."), "{newer}");
                current = next;
            }
            None => break,
        }
    }
    let distinct: HashSet<&String> = seen.iter().collect();
    assert_eq!((seen.len(), distinct.len()), (total, total), "{seen:?}");
}

/// A bad cursor is a usage error naming the option; a cursor of the other direction says
/// which option takes it.
pub(crate) fn assert_bad_cursors_are_usage_errors(database: &[&str]) {
    let run = run_on(database, &["messages", "list", "--before", "page-2"]).expect_code(2);
    assert!(run.stderr.contains("--before"), "{run:#?}");
    assert!(run.stderr.contains("bad page cursor"), "{run:#?}");
    let run = run_on(database, &["messages", "list", "--after", "o.1.*.*.*"]).expect_code(2);
    assert!(run.stderr.contains("--after"), "{run:#?}");
    assert!(run.stderr.contains("pass it to --before"), "{run:#?}");
    let both = [
        "messages",
        "list",
        "--before",
        "o.1.*.*.*",
        "--after",
        "n.1.*.*.*",
    ];
    run_on(database, &both).expect_code(2);
}
