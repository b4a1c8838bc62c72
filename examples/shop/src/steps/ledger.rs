//! [`Ledger`]: a module's step outcomes, one row per step key (`<module>_steps`, DDL from
//! [`step_ledger_ddl!`](crate::step_ledger_ddl)), written in the step handler's
//! transaction.

use bandeja::saga::StepOutcome;
use bandeja::{Command, HandlerContext, HandlerError};
use chrono::{DateTime, SubsecRound, Utc};

use super::{StepKey, StepRuns};
use crate::db::{ShopDb, Sql};

/// The outcome columns of a ledger row: `ok` (1 done, 0 refused), the refusal's reason,
/// the done step's data (JSON).
type OutcomeRow = (i64, i64, String, String);

/// The step ledger of one module: what each step key answered the first time.
///
/// A step handler calls [`claim`](Ledger::claim) first — a write, so on SQLite the
/// handler's transaction takes the write lock there instead of failing to upgrade later —
/// then, for a new key, does the step and [`record`](Ledger::record)s its outcome in the
/// same transaction. A key whose row is there already was done by a committed handling:
/// the handler replies again with that outcome and does nothing else.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ledger {
    table: &'static str,
}

impl Ledger {
    /// The ledger kept in `table` (a constant of the module: never user input).
    pub const fn new(table: &'static str) -> Ledger {
        Ledger { table }
    }

    /// Counts this send of `key`. `Some(first outcome)` if the key was done by an earlier
    /// send (nothing is to be done again); `None` for a new key (its row is written with
    /// this transaction and [`record`](Ledger::record) fills in the outcome).
    pub async fn claim(
        &self,
        conn: &mut impl Sql,
        key: &StepKey,
        now: DateTime<Utc>,
    ) -> Result<Option<StepOutcome>, sqlx::Error> {
        let table = self.table;
        let sql = format!(
            "INSERT INTO {table} (saga_key, sends, ok, reason, data, recorded_at)
             VALUES ($1, 1, 0, '', 'null', $2)
             ON CONFLICT (saga_key) DO UPDATE SET sends = {table}.sends + 1
             RETURNING sends, ok, reason, data"
        );
        let row: Option<OutcomeRow> = conn
            .fetch_optional(&sql, &[key.key.as_str().into(), now.into()])
            .await?;
        let Some((sends, ok, reason, data)) = row else {
            return Err(sqlx::Error::RowNotFound);
        };
        if sends <= 1 {
            return Ok(None);
        }
        Ok(Some(if ok == 1 {
            let data = serde_json::from_str(&data).map_err(|e| sqlx::Error::Decode(Box::new(e)))?;
            StepOutcome::Done(data)
        } else {
            StepOutcome::Refused(reason)
        }))
    }

    /// Whether the compensation of `key`'s step has already run for its saga (its row is
    /// the tombstone): a step that arrives after its own compensation must refuse.
    pub async fn compensated(
        &self,
        conn: &mut impl Sql,
        key: &StepKey,
    ) -> Result<bool, sqlx::Error> {
        let sql = format!("SELECT sends FROM {} WHERE saga_key = $1", self.table);
        let tombstone = key.compensation_key();
        let row: Option<(i64,)> = conn
            .fetch_optional(&sql, &[tombstone.as_str().into()])
            .await?;
        Ok(row.is_some())
    }

    /// Whether the forward send of `key`'s step was done (replied done) for its saga: what
    /// a compensation has to undo, if anything.
    pub async fn step_done(&self, conn: &mut impl Sql, key: &StepKey) -> Result<bool, sqlx::Error> {
        let sql = format!("SELECT ok FROM {} WHERE saga_key = $1", self.table);
        let forward = key.forward_key();
        let row: Option<(i64,)> = conn
            .fetch_optional(&sql, &[forward.as_str().into()])
            .await?;
        Ok(row.is_some_and(|(ok,)| ok == 1))
    }

    /// Records the outcome of `key`'s first send (claimed by this transaction).
    pub async fn record(
        &self,
        conn: &mut impl Sql,
        key: &StepKey,
        outcome: &StepOutcome,
    ) -> Result<(), sqlx::Error> {
        let (ok, reason, data) = match outcome {
            StepOutcome::Done(data) => (1, String::new(), data.to_string()),
            StepOutcome::Refused(reason) => (0, reason.clone(), "null".to_owned()),
        };
        let sql = format!(
            "UPDATE {} SET ok = $2, reason = $3, data = $4 WHERE saga_key = $1",
            self.table
        );
        let params = [
            key.key.as_str().into(),
            ok.into(),
            reason.as_str().into(),
            data.as_str().into(),
        ];
        conn.execute(&sql, &params).await
    }
}

/// What [`Ledger::open`] found for a step's command.
#[derive(Debug)]
pub enum Opened {
    /// An earlier send of the step was done: its first outcome is replied again, and the
    /// handler does nothing else.
    Replied,
    /// A new key, claimed by this transaction: do the step, then
    /// [`finish`](Ledger::finish).
    New {
        /// The step's key.
        key: StepKey,
        /// The handling's time (microseconds, what both databases keep).
        now: DateTime<Utc>,
    },
}

impl Ledger {
    /// What every step handler does first: reads the step's key from `command`, notes the
    /// run and waits the step delay (`runs`, outside the transaction), then
    /// [`claim`](Ledger::claim)s the key — replying again with the first outcome of a key
    /// already done ([`Opened::Replied`]).
    pub async fn open<D: ShopDb, T>(
        &self,
        ctx: &mut HandlerContext<'_, D>,
        command: &Command<T>,
        runs: &StepRuns,
        module: &str,
        order_id: i64,
    ) -> Result<Opened, HandlerError> {
        let key = StepKey::of_step(command)?;
        runs.begin(module, &key, order_id).await;
        let now = Utc::now().trunc_subsecs(6);
        match self.claim(ctx.conn(), &key, now).await? {
            Some(first) => {
                Ledger::replay(ctx, &key, first)?;
                Ok(Opened::Replied)
            }
            None => Ok(Opened::New { key, now }),
        }
    }

    /// Records `outcome` for `key` and replies it to the saga, both with the handler's
    /// transaction.
    pub async fn finish<D: ShopDb>(
        &self,
        ctx: &mut HandlerContext<'_, D>,
        key: &StepKey,
        outcome: StepOutcome,
    ) -> Result<(), HandlerError> {
        self.record(ctx.conn(), key, &outcome).await?;
        ctx.reply_to_saga(outcome)?;
        Ok(())
    }

    /// Replies again with the first outcome of `key` (a later send of a step done), doing
    /// nothing else.
    pub fn replay<D: ShopDb>(
        ctx: &mut HandlerContext<'_, D>,
        key: &StepKey,
        first: StepOutcome,
    ) -> Result<(), HandlerError> {
        tracing::info!(saga_key = %key.key, "step already done: replying again with its first outcome");
        ctx.reply_to_saga(first)?;
        Ok(())
    }
}
