//! The notification module's queries, for both stores.

use async_trait::async_trait;
use chrono::{DateTime, Utc};

use super::Email;
use crate::db::{for_each_store, Backend};

/// The queries of the notification module.
#[async_trait]
pub trait NotificationRepository: Backend {
    /// Records a sent email.
    async fn record_email(
        conn: &mut Self::Conn,
        email: &Email,
        sent_at: DateTime<Utc>,
    ) -> Result<(), sqlx::Error>;
}

const INSERT: &str = "INSERT INTO sent_emails (order_id, recipient, subject, body, sent_at)
    VALUES ($1, $2, $3, $4, $5)";

macro_rules! implement {
    ($store:ty) => {
        #[async_trait]
        impl NotificationRepository for $store {
            async fn record_email(
                conn: &mut Self::Conn,
                email: &Email,
                sent_at: DateTime<Utc>,
            ) -> Result<(), sqlx::Error> {
                sqlx::query(INSERT)
                    .bind(email.order_id)
                    .bind(&email.recipient)
                    .bind(&email.subject)
                    .bind(&email.body)
                    .bind(sent_at)
                    .execute(conn)
                    .await
                    .map(drop)
            }
        }
    };
}

for_each_store!(implement);
