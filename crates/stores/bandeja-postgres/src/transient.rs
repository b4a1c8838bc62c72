//! Which errors a handler returns are transient conflicts of PostgreSQL, to be tried again
//! without spending one of the message's retries ([`Store::is_transient`]): serialization
//! failures and deadlocks, a lock that could not be taken at once, and a lost or
//! unavailable connection. Handlers box their errors (often several wrappers deep), so the
//! whole source chain is searched for the first database error.
//!
//! Not transient: a statement timeout (`57014`) a handler's own query ran into (it would
//! only time out again, at the same cost), constraint violations, syntax errors — and any
//! error that is not PostgreSQL's (an SMTP or HTTP failure is the handler's, and spends
//! retries as usual).
//!
//! [`Store::is_transient`]: bandeja_core::Store::is_transient

use std::error::Error;

use bandeja_core::StoreError;
use sqlx::error::DatabaseError;
use sqlx::postgres::PgDatabaseError;

/// SQLSTATEs of conflicts and outages that clear up by themselves: `40001`
/// serialization_failure, `40P01` deadlock_detected, `55P03` lock_not_available, `57P01`
/// admin_shutdown, `57P02` crash_shutdown, `57P03` cannot_connect_now, `53300`
/// too_many_connections, and class `08` (connection exception).
pub(crate) fn is_transient_code(code: &str) -> bool {
    matches!(
        code,
        "40001" | "40P01" | "55P03" | "57P01" | "57P02" | "57P03" | "53300"
    ) || code.starts_with("08")
}

/// Whether a driver error is transient: a database error with a transient SQLSTATE
/// ([`is_transient_code`]), or a lost connection — an I/O error on the socket (connection
/// reset, broken pipe, unexpected end of stream), the pool timing out or closed, the
/// connection's background worker gone.
pub(crate) fn is_transient_sqlx(error: &sqlx::Error) -> bool {
    match error {
        sqlx::Error::Database(db) => database_error_is_transient(db.as_ref()),
        sqlx::Error::Io(_)
        | sqlx::Error::PoolTimedOut
        | sqlx::Error::PoolClosed
        | sqlx::Error::WorkerCrashed => true,
        _ => false,
    }
}

fn database_error_is_transient(db: &dyn DatabaseError) -> bool {
    db.code().as_deref().is_some_and(is_transient_code)
}

/// Walks `error` and its sources; the first error that comes from the database decides:
/// a [`StoreError`] (from an `emit` or another store call) by its kind, a [`sqlx::Error`]
/// by [`is_transient_sqlx`], a bare [`PgDatabaseError`] (or the boxed `DatabaseError` a
/// `sqlx::Error::Database` gives as its source) by its SQLSTATE. `false` when the chain
/// holds no database error.
pub(crate) fn in_chain(error: &(dyn Error + 'static)) -> bool {
    let mut next = Some(error);
    while let Some(e) = next {
        if let Some(store) = e.downcast_ref::<StoreError>() {
            return store.is_transient();
        }
        if let Some(sqlx) = e.downcast_ref::<sqlx::Error>() {
            return is_transient_sqlx(sqlx);
        }
        if let Some(pg) = e.downcast_ref::<PgDatabaseError>() {
            return is_transient_code(pg.code());
        }
        if let Some(db) = e.downcast_ref::<Box<dyn DatabaseError>>() {
            return database_error_is_transient(db.as_ref());
        }
        next = e.source();
    }
    false
}

#[cfg(test)]
mod tests {
    use std::borrow::Cow;
    use std::fmt;
    use std::io;

    use bandeja_core::{HandlerError, StoreErrorKind};

    use super::*;

    /// A database error with a given SQLSTATE, as the driver would return it.
    #[derive(Debug)]
    struct Coded(&'static str);

    impl fmt::Display for Coded {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            write!(f, "SQLSTATE {}", self.0)
        }
    }

    impl Error for Coded {}

    impl DatabaseError for Coded {
        fn message(&self) -> &str {
            "coded"
        }

        fn code(&self) -> Option<Cow<'_, str>> {
            Some(Cow::Borrowed(self.0))
        }

        fn as_error(&self) -> &(dyn Error + Send + Sync + 'static) {
            self
        }

        fn as_error_mut(&mut self) -> &mut (dyn Error + Send + Sync + 'static) {
            self
        }

        fn into_error(self: Box<Self>) -> Box<dyn Error + Send + Sync + 'static> {
            self
        }

        fn kind(&self) -> sqlx::error::ErrorKind {
            sqlx::error::ErrorKind::Other
        }
    }

    fn db(code: &'static str) -> sqlx::Error {
        sqlx::Error::Database(Box::new(Coded(code)))
    }

    /// What a handler's own error type wrapping a driver error looks like.
    #[derive(Debug, thiserror::Error)]
    #[error("could not reserve stock")]
    struct Reserve(#[source] sqlx::Error);

    /// A wrapper that only keeps the driver error's source (the `DatabaseError` itself).
    #[derive(Debug, thiserror::Error)]
    #[error("wrapped")]
    struct Inner(#[source] Box<dyn Error + Send + Sync + 'static>);

    fn handler_chain(error: impl Into<bandeja_core::BoxError>) -> bool {
        let handler = HandlerError::retriable(error);
        in_chain(handler.get_ref())
    }

    #[test]
    fn conflicts_and_lost_connections_are_transient() {
        for code in [
            "40001", "40P01", "55P03", "57P01", "57P03", "53300", "08006", "08003",
        ] {
            assert!(is_transient_sqlx(&db(code)), "{code}");
        }
        for error in [
            sqlx::Error::Io(io::Error::from(io::ErrorKind::ConnectionReset)),
            sqlx::Error::Io(io::Error::from(io::ErrorKind::UnexpectedEof)),
            sqlx::Error::PoolTimedOut,
            sqlx::Error::PoolClosed,
            sqlx::Error::WorkerCrashed,
        ] {
            let text = error.to_string();
            assert!(is_transient_sqlx(&error), "{text}");
        }
    }

    #[test]
    fn the_handlers_own_mistakes_are_not_transient() {
        // unique violation, syntax error, statement timeout, division by zero
        for code in ["23505", "42601", "57014", "22012"] {
            assert!(!is_transient_sqlx(&db(code)), "{code}");
        }
        for error in [
            sqlx::Error::RowNotFound,
            sqlx::Error::Protocol("bad".into()),
            sqlx::Error::ColumnNotFound("x".into()),
        ] {
            let text = error.to_string();
            assert!(!is_transient_sqlx(&error), "{text}");
        }
    }

    #[test]
    fn the_chain_is_searched_through_wrappers() {
        assert!(handler_chain(db("40P01")));
        assert!(handler_chain(Reserve(db("40001"))));
        assert!(!handler_chain(Reserve(db("23505"))));
        // A bare `DatabaseError` (the source of `sqlx::Error::Database`).
        let bare: Box<dyn DatabaseError> = Box::new(Coded("40P01"));
        assert!(handler_chain(Inner(Box::new(bare))));
        let bare: Box<dyn DatabaseError> = Box::new(Coded("23505"));
        assert!(!handler_chain(Inner(Box::new(bare))));
        // A store error from an `emit` inside the handler decides by its kind.
        let store = StoreError::new(StoreErrorKind::Transient, "emit", "connection reset");
        assert!(!handler_chain(Reserve(sqlx::Error::Protocol("x".into()))));
        assert!(handler_chain(store));
        let store = StoreError::new(StoreErrorKind::Duplicate, "emit", "duplicate id");
        assert!(!handler_chain(store));
    }

    #[test]
    fn store_errors_of_bandejas_own_statements_agree() {
        // The same codes make bandeja's own statements transient, plus a statement timeout
        // (an overloaded database, for a claim or a resolve).
        for code in ["40001", "40P01", "55P03", "08006", "53300", "57014"] {
            let error = crate::sqlx_error("claim", db(code));
            assert_eq!(error.kind(), StoreErrorKind::Transient, "{code}");
            assert!(in_chain(&error), "{code}");
        }
        for code in ["42601", "22012"] {
            assert_eq!(
                crate::sqlx_error("claim", db(code)).kind(),
                StoreErrorKind::Permanent,
                "{code}"
            );
        }
    }

    #[test]
    fn errors_that_are_not_the_databases_are_not_transient() {
        // A remote service resetting the connection is the handler's failure, not ours.
        assert!(!handler_chain(io::Error::from(
            io::ErrorKind::ConnectionReset
        )));
        assert!(!handler_chain("smtp: 451 try again later"));
    }
}
