//! `bandeja sagas list [--type T] [--status S] [--limit N]`: the sagas, newest first, with
//! the step each awaits or compensates; `bandeja sagas show ID`: one saga with its data
//! and its history (every command sent, every reply, timeout and the end).

use std::io::{self, Write};

use bandeja_core::admin::Admin;
use bandeja_core::saga::{SagaFilter, SagaPhase};

use crate::cli::{SagasListArgs, SagasShowArgs};
use crate::error::CliError;
use crate::output;
use crate::table::Table;

fn phase(phase: SagaPhase) -> &'static str {
    match phase {
        SagaPhase::Forward => "forward",
        SagaPhase::Compensation => "compensation",
    }
}

/// Prints the sagas `args` selects.
pub(crate) async fn list<S: Admin>(
    store: &S,
    args: &SagasListArgs,
    json: bool,
) -> Result<(), CliError> {
    let filter = SagaFilter {
        saga_type: args.saga_type.clone(),
        status: args.status,
        limit: usize::try_from(args.limit).unwrap_or(50),
    };
    let sagas = store.list_sagas(&filter).await?;
    if json {
        return output::json(&sagas);
    }
    if sagas.is_empty() {
        return output::line("no saga matches");
    }
    let mut table = Table::new(&[
        "STARTED", "ID", "TYPE", "STATUS", "STEP", "PHASE", "ATTEMPT", "REASON",
    ])
    .right_align(&[6]);
    for s in &sagas {
        table.push(vec![
            output::instant(Some(s.created_at)),
            s.id.to_string(),
            s.saga_type.clone(),
            s.status.to_string(),
            s.current_step().to_owned(),
            phase(s.phase).to_owned(),
            s.attempt.to_string(),
            output::shorten(s.reason.as_deref().unwrap_or_default(), 60),
        ]);
    }
    let mut out = io::stdout().lock();
    table.write(&mut out)?;
    out.flush()?;
    Ok(())
}

/// Prints one saga, or fails with "not found" (exit code 3).
pub(crate) async fn show<S: Admin>(
    store: &S,
    args: &SagasShowArgs,
    json: bool,
) -> Result<(), CliError> {
    let Some(saga) = store.saga(args.id).await? else {
        return Err(CliError::NotFound(format!("no saga {}", args.id)));
    };
    if json {
        return output::json(&saga);
    }
    let mut out = io::stdout().lock();
    writeln!(out, "saga      {}", saga.id)?;
    writeln!(out, "type      {}", saga.saga_type)?;
    writeln!(out, "status    {}", saga.status)?;
    writeln!(
        out,
        "step      {} ({})",
        saga.current_step(),
        phase(saga.phase)
    )?;
    writeln!(out, "tenant    {}", saga.tenant_id)?;
    writeln!(out, "started   {}", output::instant(Some(saga.created_at)))?;
    writeln!(out, "updated   {}", output::instant(Some(saga.updated_at)))?;
    if let Some(deadline) = saga.deadline {
        writeln!(out, "deadline  {}", output::instant(Some(deadline)))?;
    }
    if let Some(reason) = &saga.reason {
        writeln!(out, "reason    {reason}")?;
    }
    writeln!(out, "data      {}", saga.data)?;
    writeln!(out)?;
    writeln!(out, "history (oldest first)")?;
    let mut table = Table::new(&[
        "AT", "WHAT", "STEP", "PHASE", "ATTEMPT", "MESSAGE", "DETAIL",
    ])
    .right_align(&[4]);
    for e in &saga.history {
        table.push(vec![
            output::instant(Some(e.at)),
            serde_json::to_value(e.kind)
                .ok()
                .and_then(|v| v.as_str().map(str::to_owned))
                .unwrap_or_default(),
            e.step.clone(),
            phase(e.phase).to_owned(),
            e.attempt.to_string(),
            e.message_id.map(|m| m.to_string()).unwrap_or_default(),
            e.detail.clone().unwrap_or_default(),
        ]);
    }
    table.write(&mut out)?;
    out.flush()?;
    Ok(())
}
