//! What can go wrong with schemas: two payload types claiming one version with different
//! schemas, and a file that is not a schema snapshot.

/// A schema registry or snapshot that cannot be used.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SchemaError {
    /// Two Rust types register the same message type and version with different schemas.
    #[error(
        "`{first}` and `{second}` both register `{message_type}` version {version}, with \
         different schemas: give the older shape its own VERSION (a separate type with the \
         same TYPE), or register only one of them"
    )]
    Conflict {
        /// The message type.
        message_type: String,
        /// The version both claim.
        version: u32,
        /// The Rust type registered first.
        first: &'static str,
        /// The Rust type registered second.
        second: &'static str,
    },
    /// The text is not JSON, or not shaped as a snapshot.
    #[error("not a schema snapshot: {reason}")]
    Malformed {
        /// What is wrong, and where.
        reason: String,
        /// The JSON error.
        #[source]
        source: serde_json::Error,
    },
    /// The snapshot names another format (or none).
    #[error(
        "not a schema snapshot of this format: `format` is {found}, expected \"{expected}\" \
         (export the schemas again with the application's schema export)"
    )]
    Format {
        /// The `format` found, as JSON (`null` when absent).
        found: String,
        /// The format this version of bandeja reads.
        expected: &'static str,
    },
}
