//! The notification module's queries.

use chrono::{DateTime, Utc};

use super::Email;
use crate::db::Sql;

const INSERT: &str = "INSERT INTO sent_emails (order_id, recipient, subject, body, sent_at)
    VALUES ($1, $2, $3, $4, $5)";

/// Records a sent email.
pub(super) async fn record_email(
    conn: &mut impl Sql,
    email: &Email,
    sent_at: DateTime<Utc>,
) -> Result<(), sqlx::Error> {
    let params = [
        email.order_id.into(),
        (&email.recipient).into(),
        (&email.subject).into(),
        (&email.body).into(),
        sent_at.into(),
    ];
    conn.execute(INSERT, &params).await
}
