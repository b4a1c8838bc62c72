//! `bandeja subscribers`: the subscriptions with the live processes that run them, their
//! pending and FAILED rows and their state (what `GET /subscribers` answers); `bandeja
//! subscribers retire NAME --discard|--keep` ends one on purpose.
//!
//! The listing counts a process as live until [`live_for`](bandeja_core::subscriptions::live_for)
//! of the configuration's stuck threshold after its last heartbeat: what a process with the
//! same configuration (`--config`, `BANDEJA_*`) refreshes within. `retire` always waits for
//! [`longest_live_for`]: should the processes run with another configuration, a shorter
//! bound could take a running process for a stopped one and let a retirement through.

use std::io::{self, Write};

use bandeja_core::admin::{
    kind_plural, longest_live_for, retired_kinds, Admin, Attendance, MessageFilter, RetireRefused,
    RetireReport, RetiredSubscription, Settle, SubscriptionListing, SubscriptionView,
};
use bandeja_core::{MessageKind, MessageStatus, StoreError};

use crate::cli::{RetireArgs, SubscribersArgs, SubscribersCommand};
use crate::confirm::confirm;
use crate::error::CliError;
use crate::output;
use crate::table::Table;

/// Runs `subscribers` or `subscribers retire`.
pub(crate) async fn run<S: Admin>(
    store: &S,
    args: &SubscribersArgs,
    json: bool,
) -> Result<(), CliError> {
    match &args.command {
        None => list(store, args, json).await,
        Some(SubscribersCommand::Retire(retire_args)) => retire(store, retire_args, json).await,
    }
}

async fn list<S: Admin>(store: &S, args: &SubscribersArgs, json: bool) -> Result<(), CliError> {
    let live_for = args.live_for;
    let views = store.subscriptions(live_for).await?;
    let listing = SubscriptionListing::new(views, args.stuck_threshold, live_for);
    if json {
        return output::json(&listing);
    }
    let mut out = io::stdout().lock();
    if listing.subscriptions.is_empty() {
        writeln!(
            out,
            "no subscription is registered: a process registers its subscribers when it starts"
        )?;
        out.flush()?;
        return Ok(());
    }
    let mut table = Table::new(&[
        "KIND",
        "SUBSCRIBER",
        "TYPE",
        "TENANT",
        "SERVICE",
        "LIVE PROCESSES",
        "PENDING",
        "FAILED",
        "FIRST SEEN",
        "LAST SEEN",
        "STATE",
    ])
    .right_align(&[6, 7]);
    for entry in &listing.subscriptions {
        let s = &entry.subscription;
        let processes: Vec<String> = s
            .processes
            .iter()
            .map(|p| format!("{} ({}, pid {})", p.process, p.host, p.pid))
            .collect();
        table.push(vec![
            kind_plural(s.kind).to_owned(),
            s.subscriber.clone(),
            s.message_type.clone(),
            s.tenant.clone().unwrap_or_else(|| "*".to_owned()),
            s.service.clone().unwrap_or_else(|| "-".to_owned()),
            if processes.is_empty() {
                "-".to_owned()
            } else {
                processes.join(", ")
            },
            s.pending.to_string(),
            s.failed.to_string(),
            output::instant(Some(s.first_seen_at)),
            output::instant(Some(s.last_seen_at)),
            entry.state.as_str().to_owned(),
        ]);
    }
    table.write(&mut out)?;
    let views: Vec<SubscriptionView> = listing
        .subscriptions
        .iter()
        .map(|e| e.subscription.clone())
        .collect();
    let attention: Vec<String> = bandeja_core::admin::attendance(&views, args.stuck_threshold)
        .into_iter()
        .filter_map(|s| s.reason.map(|r| format!("{}: {r}", s.state.as_str())))
        .collect();
    if !attention.is_empty() {
        writeln!(out)?;
        for line in &attention {
            writeln!(out, "{line}")?;
        }
    }
    writeln!(
        out,
        "\npending: PENDING + PROCESSING rows; tenant *: every tenant; live: refreshed within \
         {}; times in UTC\nwaiting: no live process runs it, its rows wait for one; \
         unattended: so for longer than {} (/health is DOWN)",
        listing.live_for, listing.stuck_threshold
    )?;
    out.flush()?;
    Ok(())
}

/// What `--dry-run` prints (`--json`: this document).
#[derive(Debug, serde::Serialize)]
struct Plan<'a> {
    action: &'static str,
    subscriber: &'a str,
    settle: Settle,
    dry_run: bool,
    /// The subscriptions that would be deleted.
    subscriptions: Vec<RetiredSubscription>,
    pending: u64,
    processing: u64,
    failed: u64,
}

/// The rows of `subscriber` in the inboxes of `kinds` in `status`.
async fn rows_in<S: Admin>(
    store: &S,
    kinds: &[MessageKind],
    subscriber: &str,
    status: MessageStatus,
) -> Result<u64, StoreError> {
    let mut total = 0;
    for kind in kinds {
        total += store
            .count(&MessageFilter {
                box_kind: Some(kind.inbox()),
                status: Some(status),
                subscriber: Some(subscriber.to_owned()),
                ..MessageFilter::default()
            })
            .await?;
    }
    Ok(total)
}

/// A retirement refusal as the CLI reports it: an unknown name is "not found" (exit 3),
/// `bandeja.rejected` or an empty name a usage error (2), live processes a refusal (1).
fn refusal(error: StoreError) -> CliError {
    match RetireRefused::of(&error) {
        Some(refused @ RetireRefused::Unknown { .. }) => CliError::NotFound(refused.to_string()),
        Some(refused @ RetireRefused::Running { .. }) => CliError::Refused(refused.to_string()),
        Some(refused) => CliError::Usage(refused.to_string()),
        None => CliError::Store(error),
    }
}

async fn retire<S: Admin>(store: &S, args: &RetireArgs, json: bool) -> Result<(), CliError> {
    let settle = if args.keep {
        Settle::Keep
    } else {
        Settle::Discard
    };
    let name = args.name.as_str();
    bandeja_core::admin::check_retirable(name).map_err(refusal)?;
    let live_for = longest_live_for();
    let kinds = retired_kinds(args.kind);
    let views = store.subscriptions(live_for).await?;
    let mine: Vec<&SubscriptionView> = views
        .iter()
        .filter(|v| v.subscriber == name && kinds.contains(&v.kind))
        .collect();
    let mut processes = Vec::new();
    for view in &mine {
        for process in &view.processes {
            if !processes
                .iter()
                .any(|p: &bandeja_core::admin::ProcessView| p.process == process.process)
            {
                processes.push(process.clone());
            }
        }
    }
    if !processes.is_empty() {
        return Err(refusal(
            RetireRefused::Running {
                subscriber: name.to_owned(),
                processes,
            }
            .into_error(),
        ));
    }
    let pending = rows_in(store, &kinds, name, MessageStatus::Pending).await?;
    let processing = rows_in(store, &kinds, name, MessageStatus::Processing).await?;
    let failed = rows_in(store, &kinds, name, MessageStatus::Failed).await?;
    if mine.is_empty() && pending + processing + failed == 0 {
        let known = views.iter().map(|v| v.subscriber.as_str());
        return Err(refusal(
            RetireRefused::unknown(name, args.kind, known).into_error(),
        ));
    }
    let types: Vec<String> = kinds
        .iter()
        .filter_map(|kind| {
            let of_kind: Vec<&str> = mine
                .iter()
                .filter(|v| v.kind == *kind)
                .map(|v| v.message_type.as_str())
                .collect();
            (!of_kind.is_empty()).then(|| format!("{}: {}", kind_plural(*kind), of_kind.join(", ")))
        })
        .collect();
    let fate = match settle {
        Settle::Discard => format!(
            "deleted: {pending} PENDING, {processing} PROCESSING (those whose lease ran out) \
             and {failed} FAILED row(s)"
        ),
        Settle::Keep => format!(
            "kept as FAILED: {pending} PENDING and {processing} PROCESSING (those whose lease \
             ran out) row(s); its {failed} FAILED row(s) stay"
        ),
    };
    output::note(&format!(
        "retire `{name}`: {} stop receiving messages; {fate}; COMPLETED rows stay",
        if types.is_empty() {
            "no subscription left, nothing will".to_owned()
        } else {
            format!("its subscriptions ({})", types.join("; "))
        }
    ));
    if args.confirm.dry_run {
        let plan = Plan {
            action: "retire",
            subscriber: name,
            settle,
            dry_run: true,
            subscriptions: mine
                .iter()
                .map(|v| RetiredSubscription {
                    kind: v.kind,
                    message_type: v.message_type.clone(),
                    tenant: v.tenant.clone(),
                })
                .collect(),
            pending,
            processing,
            failed,
        };
        if json {
            return output::json(&plan);
        }
        return output::line("dry run: nothing changed");
    }
    let question = match settle {
        Settle::Discard => format!(
            "Retire subscriber `{name}` and delete its {} pending and {failed} FAILED row(s)?",
            pending + processing
        ),
        Settle::Keep => format!(
            "Retire subscriber `{name}` and mark its {} pending row(s) FAILED?",
            pending + processing
        ),
    };
    confirm(&question, args.confirm.yes)?;
    let report = store
        .retire(args.kind, name, settle, live_for)
        .await
        .map_err(refusal)?;
    if json {
        return output::json(&report);
    }
    output::line(&describe(&report))
}

/// What a retirement did, in one sentence.
fn describe(report: &RetireReport) -> String {
    let rows = match report.settle {
        Settle::Discard => format!(
            "{} pending and {} FAILED row(s) deleted",
            report.discarded, report.discarded_failed
        ),
        Settle::Keep => format!(
            "{} row(s) marked FAILED, kept for inspection (`bandeja retry --all-failed \
             --subscriber {}` once a process runs it)",
            report.kept, report.subscriber
        ),
    };
    let in_flight = if report.in_flight > 0 {
        format!(
            "; {} PROCESSING row(s) still under a lease were left to their holder (retire \
             again once it ran out)",
            report.in_flight
        )
    } else {
        String::new()
    };
    format!(
        "retired `{}`: {} subscription(s) deleted; {rows}{in_flight}",
        report.subscriber,
        report.subscriptions.len()
    )
}

/// The subscriptions that need attention, for `bandeja status`: unattended and waiting
/// ones (`None` when they cannot be read, with a note on stderr).
pub(crate) async fn needing_attention<S: Admin>(
    store: &S,
    stuck_threshold: std::time::Duration,
    live_for: std::time::Duration,
) -> Option<Vec<bandeja_core::admin::SubscriberState>> {
    match store.subscriptions(live_for).await {
        Ok(views) => Some(
            bandeja_core::admin::attendance(&views, stuck_threshold)
                .into_iter()
                .filter(|s| matches!(s.state, Attendance::Unattended | Attendance::Waiting))
                .collect(),
        ),
        Err(error) => {
            output::note(&format!("cannot read the subscriptions: {error}"));
            None
        }
    }
}
