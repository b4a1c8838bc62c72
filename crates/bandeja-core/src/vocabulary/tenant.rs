//! The current tenant: a task-local context that emission reads.
//!
//! Commands take their source tenant from here (`Command::to`, `Command::to_self`), and
//! events are stamped with it. Run tenant-scoped work inside [`scope`]; workers run every
//! handler inside the scope of its message's tenant.

use std::fmt;
use std::future::Future;
use std::sync::Arc;

use crate::error::{Error, Result};

/// Longest tenant id accepted.
pub const MAX_TENANT_ID_LEN: usize = 128;

/// A tenant id: non-empty, at most [`MAX_TENANT_ID_LEN`] bytes, no control characters.
#[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct TenantId(Arc<str>);

impl TenantId {
    /// The tenant of messages emitted outside any tenant scope: `default`.
    pub fn default_tenant() -> TenantId {
        TenantId(Arc::from("default"))
    }

    /// Validates and wraps a tenant id.
    pub fn new(id: impl AsRef<str>) -> Result<TenantId> {
        let id = id.as_ref();
        if id.is_empty() || id.len() > MAX_TENANT_ID_LEN || id.chars().any(char::is_control) {
            return Err(Error::InvalidTenant(
                id.chars().take(MAX_TENANT_ID_LEN).collect(),
            ));
        }
        Ok(TenantId(Arc::from(id)))
    }

    /// The id as text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl TryFrom<String> for TenantId {
    type Error = Error;
    fn try_from(value: String) -> Result<Self> {
        TenantId::new(value)
    }
}

impl From<TenantId> for String {
    fn from(value: TenantId) -> Self {
        value.0.to_string()
    }
}

impl fmt::Display for TenantId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl fmt::Debug for TenantId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "TenantId({})", &self.0)
    }
}

tokio::task_local! {
    static CURRENT_TENANT: TenantId;
}

/// Runs `fut` with `tenant` as the current tenant.
pub async fn scope<F: Future>(tenant: TenantId, fut: F) -> F::Output {
    CURRENT_TENANT.scope(tenant, fut).await
}

/// Runs a synchronous closure with `tenant` as the current tenant.
pub fn sync_scope<R>(tenant: TenantId, f: impl FnOnce() -> R) -> R {
    CURRENT_TENANT.sync_scope(tenant, f)
}

/// The current tenant, if the caller runs inside [`scope`].
pub fn current() -> Option<TenantId> {
    CURRENT_TENANT.try_with(Clone::clone).ok()
}

/// The current tenant, or an error saying how to set one.
pub fn require_current() -> Result<TenantId> {
    current().ok_or(Error::NoTenant)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn scope_sets_and_clears_the_current_tenant() {
        assert!(current().is_none());
        let acme = TenantId::new("acme").unwrap();
        let seen = scope(acme.clone(), async { current() }).await;
        assert_eq!(seen, Some(acme));
        assert!(matches!(require_current(), Err(Error::NoTenant)));
    }

    #[test]
    fn invalid_tenant_ids_are_rejected() {
        assert!(TenantId::new("").is_err());
        assert!(TenantId::new("a\nb").is_err());
        assert!(TenantId::new("x".repeat(MAX_TENANT_ID_LEN + 1)).is_err());
        assert!(
            TenantId::new("tenant'; DROP TABLE x; --").is_ok(),
            "data, never SQL"
        );
    }
}
