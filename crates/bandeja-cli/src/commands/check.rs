//! `bandeja status --check`: the boxes judged for monitoring (cron, Nagios, a CI gate).
//! One summary line in the Nagios plugin style (`BANDEJA OK - … | perfdata`) and an exit
//! code: 0 when healthy, [`Exit::FailedRows`] (5) with more FAILED rows than
//! `--failed-threshold`, [`Exit::StuckRows`] (6) with stuck rows, whatever the FAILED ones.

use bandeja_core::admin::{Admin, BoxCounters};
use bandeja_core::config::format_duration;
use bandeja_core::BoxKind;

use crate::cli::StatusArgs;
use crate::error::{CliError, Exit};
use crate::output;
use crate::scan;

/// The verdict of a check.
#[derive(Debug, serde::Serialize)]
struct Verdict {
    /// `OK`, `WARNING` (FAILED rows over the threshold) or `CRITICAL` (stuck rows).
    state: &'static str,
    /// The exit code the command ends with.
    exit_code: u8,
    /// That code's meaning, as `judge` decided it.
    #[serde(skip)]
    exit: Exit,
    /// The summary line.
    summary: String,
    /// The stuck threshold the `stuck` count uses (ISO-8601).
    stuck_threshold: String,
    /// FAILED rows above this many fail the check.
    failed_threshold: u64,
    /// PENDING rows, all boxes together.
    pending: u64,
    /// PROCESSING rows.
    processing: u64,
    /// FAILED rows.
    failed: u64,
    /// Stuck rows.
    stuck: u64,
    /// The counters of each box.
    boxes: Vec<BoxCounters>,
}

/// Counts, judges, prints the summary line (or the JSON verdict) and ends with the code.
pub(crate) async fn run<S: Admin>(
    store: &S,
    args: &StatusArgs,
    json: bool,
) -> Result<(), CliError> {
    let boxes = store.counters(args.stuck_threshold, false).await?;
    let verdict = judge(boxes, args);
    if json {
        output::json(&verdict)?;
    } else {
        output::line(&verdict.summary)?;
    }
    if verdict.exit == Exit::Ok {
        return Ok(());
    }
    Err(CliError::Unhealthy {
        exit: verdict.exit,
        summary: format!("{} (exit {})", verdict.state, verdict.exit.code()),
    })
}

/// The verdict on `boxes` with the thresholds of `args`.
fn judge(boxes: Vec<BoxCounters>, args: &StatusArgs) -> Verdict {
    let sum = |count: fn(&BoxCounters) -> u64| boxes.iter().map(count).sum::<u64>();
    let (pending, processing) = (sum(|c| c.pending), sum(|c| c.processing));
    let (failed, stuck) = (sum(|c| c.failed), sum(|c| c.stuck));
    let per_box = |count: fn(&BoxCounters) -> u64| -> Vec<(BoxKind, u64)> {
        boxes.iter().map(|c| (c.box_kind, count(c))).collect()
    };
    let threshold = format_duration(args.stuck_threshold);
    let limit = args.failed_threshold;
    let stuck_part = if stuck > 0 {
        format!(
            "stuck: {} PENDING and unchanged for longer than {threshold}",
            scan::describe(&per_box(|c| c.stuck))
        )
    } else {
        format!("stuck: none, threshold {threshold}")
    };
    let failed_part = if failed > 0 {
        format!(
            "FAILED: {}, threshold {limit}",
            scan::describe(&per_box(|c| c.failed))
        )
    } else {
        format!("FAILED: none, threshold {limit}")
    };
    let (state, exit) = if stuck > 0 {
        ("CRITICAL", Exit::StuckRows)
    } else if failed > limit {
        ("WARNING", Exit::FailedRows)
    } else {
        ("OK", Exit::Ok)
    };
    let (first, second) = if stuck == 0 && failed > limit {
        (failed_part, stuck_part)
    } else {
        (stuck_part, failed_part)
    };
    let summary = format!(
        "BANDEJA {state} - {first}; {second}; {pending} pending, {processing} processing \
         | pending={pending} processing={processing} failed={failed};{limit} stuck={stuck};;0"
    );
    Verdict {
        state,
        exit_code: exit.code(),
        exit,
        summary,
        stuck_threshold: threshold,
        failed_threshold: limit,
        pending,
        processing,
        failed,
        stuck,
        boxes,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    fn args(extra: &[&str]) -> StatusArgs {
        let mut argv = vec!["bandeja", "status", "--check"];
        argv.extend_from_slice(extra);
        match crate::cli::Cli::try_parse_from(argv)
            .expect("parses")
            .command
        {
            crate::cli::Command::Status(args) => args,
            other => panic!("unexpected {other:?}"),
        }
    }

    fn counters(box_kind: BoxKind, failed: u64, stuck: u64) -> BoxCounters {
        BoxCounters {
            failed,
            stuck,
            pending: stuck,
            ..BoxCounters::new(box_kind, None)
        }
    }

    #[test]
    fn stuck_rows_are_critical_and_failed_rows_over_the_threshold_a_warning() {
        let healthy = judge(vec![counters(BoxKind::InboxEvents, 0, 0)], &args(&[]));
        assert_eq!((healthy.state, healthy.exit_code), ("OK", 0));
        assert!(
            healthy
                .summary
                .starts_with("BANDEJA OK - stuck: none, threshold PT5M; FAILED: none"),
            "{}",
            healthy.summary
        );
        let failed = judge(vec![counters(BoxKind::InboxEvents, 2, 0)], &args(&[]));
        assert_eq!((failed.state, failed.exit_code), ("WARNING", 5));
        assert!(
            failed.summary.starts_with(
                "BANDEJA WARNING - FAILED: 2 rows (inbox_events 2), threshold 0; stuck: none"
            ),
            "{}",
            failed.summary
        );
        let tolerated = judge(
            vec![counters(BoxKind::InboxEvents, 2, 0)],
            &args(&["--failed-threshold", "2"]),
        );
        assert_eq!(tolerated.exit_code, 0);
        let stuck = judge(vec![counters(BoxKind::OutboxEvents, 3, 1)], &args(&[]));
        assert_eq!((stuck.state, stuck.exit_code), ("CRITICAL", 6));
        assert!(
            stuck
                .summary
                .contains("| pending=1 processing=0 failed=3;0 stuck=1;;0"),
            "{}",
            stuck.summary
        );
    }
}
