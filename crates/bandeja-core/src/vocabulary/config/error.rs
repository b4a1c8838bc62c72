//! [`ConfigError`]: a configuration that cannot be used, naming the key.

use std::error::Error as StdError;
use std::fmt;
use std::path::{Path, PathBuf};

/// What kind of mistake a [`ConfigError`] is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum ConfigErrorKind {
    /// A key that bandeja does not know, most likely a typo ([`ConfigError::suggestion`]
    /// has the near miss, [`ConfigError::hint`] the keys expected there).
    UnknownKey,
    /// A value of the wrong type, out of range, or inconsistent with another setting
    /// ([`ConfigError::reason`] says what is wrong and what is expected).
    InvalidValue,
    /// One setting written under both its names (bandeja's and seed 000's, e.g.
    /// `events.outbox.batch-size` and `app.events.outbox-processor.batch-size`) in one
    /// source, with different values ([`ConfigError::other_key`]).
    Conflict,
    /// The configuration file cannot be read (the source error says why).
    Io,
    /// The configuration is not well-formed TOML (the source error has the line, column
    /// and what was expected).
    Parse,
}

impl fmt::Display for ConfigErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            ConfigErrorKind::UnknownKey => "unknown key",
            ConfigErrorKind::InvalidValue => "invalid value",
            ConfigErrorKind::Conflict => "conflicting names of one setting",
            ConfigErrorKind::Io => "unreadable file",
            ConfigErrorKind::Parse => "malformed TOML",
        })
    }
}

/// A configuration that cannot be used. It names the offending key: the full dotted path
/// as the source wrote it (e.g. `events.outbox.batch-size`) or the environment variable,
/// and the file when the key is in one.
///
/// `Display` is one short sentence; [`ConfigError::full_message`] adds the causes and the
/// [hint](ConfigError::hint), for a program that prints one line and exits.
#[derive(Debug, thiserror::Error)]
#[error("{}", Described(inner))]
#[non_exhaustive]
pub struct ConfigError {
    inner: Box<Inner>,
    /// Why a file could not be read, where its TOML is malformed.
    #[source]
    source: Option<Box<dyn StdError + Send + Sync>>,
}

#[derive(Debug)]
struct Inner {
    kind: ConfigErrorKind,
    /// The key or variable (unknown key, invalid value, conflict), or where the text came
    /// from (malformed TOML).
    key: Option<String>,
    value: Option<String>,
    reason: Option<String>,
    other: Option<(String, String)>,
    file: Option<PathBuf>,
    suggestion: Option<String>,
    hint: Option<String>,
}

impl ConfigError {
    fn new(kind: ConfigErrorKind) -> Self {
        let inner = Inner {
            kind,
            key: None,
            value: None,
            reason: None,
            other: None,
            file: None,
            suggestion: None,
            hint: None,
        };
        ConfigError {
            inner: Box::new(inner),
            source: None,
        }
    }

    /// A key bandeja does not know; `suggestion` a known key close to it, `expected` the
    /// keys known there (`` `a`, `b` in `events.outbox` ``).
    pub(crate) fn unknown_key(key: String, suggestion: Option<String>, expected: String) -> Self {
        let mut error = ConfigError::new(ConfigErrorKind::UnknownKey);
        error.inner.key = Some(key);
        error.inner.suggestion = suggestion;
        error.inner.hint = Some(format!("expected one of {expected}"));
        error
    }

    /// A refused value: `reason` says what is wrong and what to do.
    pub(crate) fn invalid_value(
        key: impl Into<String>,
        value: impl Into<String>,
        reason: impl Into<String>,
    ) -> Self {
        let mut error = ConfigError::new(ConfigErrorKind::InvalidValue);
        error.inner.key = Some(key.into());
        error.inner.value = Some(value.into());
        error.inner.reason = Some(reason.into());
        error
    }

    /// One setting under two names with two values.
    pub(crate) fn conflict(key: String, value: String, other_key: String, other: String) -> Self {
        let mut error = ConfigError::new(ConfigErrorKind::Conflict);
        error.inner.key = Some(key);
        error.inner.value = Some(value);
        error.inner.other = Some((other_key, other));
        error
    }

    /// The file at `path` cannot be read.
    pub(crate) fn io(path: &Path, source: std::io::Error) -> Self {
        let mut error = ConfigError::new(ConfigErrorKind::Io);
        error.inner.file = Some(path.to_path_buf());
        error.source = Some(Box::new(source));
        error
    }

    /// The TOML text from `origin` (a file path or `<string>`) is malformed.
    pub(crate) fn parse(origin: &str, file: Option<&Path>, source: toml::de::Error) -> Self {
        let mut error = ConfigError::new(ConfigErrorKind::Parse);
        error.inner.key = Some(origin.to_owned());
        error.inner.file = file.map(Path::to_path_buf);
        error.source = Some(Box::new(source));
        error
    }

    /// This error, found in the file at `path`.
    pub(crate) fn in_file(mut self, path: &Path) -> Self {
        self.inner.file = Some(path.to_path_buf());
        self
    }

    /// This error about `key` instead (the same setting, named as its source wrote it).
    pub(crate) fn renamed(mut self, key: String) -> Self {
        self.inner.key = Some(key);
        self
    }

    /// What kind of mistake this is.
    #[must_use]
    pub fn kind(&self) -> ConfigErrorKind {
        self.inner.kind
    }

    /// The key (or variable) this error names; for a conflict, the first of the two names.
    /// `None` for I/O and syntax errors.
    #[must_use]
    pub fn key(&self) -> Option<&str> {
        match self.inner.kind {
            ConfigErrorKind::Io | ConfigErrorKind::Parse => None,
            _ => self.inner.key.as_deref(),
        }
    }

    /// The offending value as written (invalid values and conflicts).
    #[must_use]
    pub fn value(&self) -> Option<&str> {
        self.inner.value.as_deref()
    }

    /// What is wrong with the value and what is expected (invalid values).
    #[must_use]
    pub fn reason(&self) -> Option<&str> {
        self.inner.reason.as_deref()
    }

    /// A conflict's other name of the setting, as written.
    #[must_use]
    pub fn other_key(&self) -> Option<&str> {
        self.inner.other.as_ref().map(|(key, _)| key.as_str())
    }

    /// The value written under [`ConfigError::other_key`].
    #[must_use]
    pub fn other_value(&self) -> Option<&str> {
        self.inner.other.as_ref().map(|(_, value)| value.as_str())
    }

    /// The configuration file the error is in (or that cannot be read), if any.
    #[must_use]
    pub fn file(&self) -> Option<&Path> {
        self.inner.file.as_deref()
    }

    /// For an unknown key, the known key it most likely meant.
    #[must_use]
    pub fn suggestion(&self) -> Option<&str> {
        self.inner.suggestion.as_deref()
    }

    /// What to do, beyond the message: for an unknown key, the keys expected there
    /// (`` expected one of `enabled`, ... in `events.outbox` ``).
    #[must_use]
    pub fn hint(&self) -> Option<&str> {
        self.inner.hint.as_deref()
    }

    /// The message followed by its causes (why a file could not be read, where its TOML
    /// is malformed) and the [hint](ConfigError::hint), for a program that prints one
    /// line and exits: the error's own `Display` leaves those out.
    #[must_use]
    pub fn full_message(&self) -> String {
        let mut text = self.to_string();
        let mut cause = StdError::source(self);
        while let Some(error) = cause {
            text.push_str(": ");
            text.push_str(error.to_string().trim_end());
            cause = error.source();
        }
        if let Some(hint) = self.hint() {
            text.push_str("; ");
            text.push_str(hint);
        }
        text
    }
}

/// The message of a [`ConfigError`].
struct Described<'a>(&'a Inner);

impl fmt::Display for Described<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let e = self.0;
        let key = e.key.as_deref().unwrap_or_default();
        let value = e.value.as_deref().unwrap_or_default();
        match (e.kind, &e.file) {
            (ConfigErrorKind::Io, Some(path)) => {
                return write!(f, "cannot read configuration file `{}`", path.display())
            }
            (ConfigErrorKind::Parse, _) => return write!(f, "malformed TOML in {key}"),
            (_, Some(path)) => write!(f, "in configuration file `{}`: ", path.display())?,
            (_, None) => {}
        }
        match e.kind {
            ConfigErrorKind::UnknownKey => {
                write!(f, "unknown configuration key `{key}`")?;
                match &e.suggestion {
                    Some(near) => write!(f, " (did you mean `{near}`?)"),
                    None => Ok(()),
                }
            }
            ConfigErrorKind::Conflict => {
                let (other, other_value) = e.other.clone().unwrap_or_default();
                write!(
                    f,
                    "`{key}` and `{other}` are one setting (one is the seed's name of the \
                     other) written with different values, `{value}` and `{other_value}`: \
                     keep one of them"
                )
            }
            _ => {
                let reason = e.reason.as_deref().unwrap_or_default();
                write!(f, "invalid value `{value}` for `{key}`: {reason}")
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn display_is_short_and_the_hint_is_apart() {
        let error = ConfigError::unknown_key(
            "events.outbox.bach-size".to_owned(),
            Some("events.outbox.batch-size".to_owned()),
            "`enabled`, `batch-size` in `events.outbox`".to_owned(),
        );
        assert_eq!(
            error.to_string(),
            "unknown configuration key `events.outbox.bach-size` \
             (did you mean `events.outbox.batch-size`?)"
        );
        assert_eq!(
            error.hint(),
            Some("expected one of `enabled`, `batch-size` in `events.outbox`")
        );
        let in_file = error.in_file(Path::new("app.toml"));
        assert_eq!(
            in_file.full_message(),
            "in configuration file `app.toml`: unknown configuration key \
             `events.outbox.bach-size` (did you mean `events.outbox.batch-size`?); expected \
             one of `enabled`, `batch-size` in `events.outbox`"
        );
        assert_eq!(in_file.kind(), ConfigErrorKind::UnknownKey);
        assert_eq!(in_file.key(), Some("events.outbox.bach-size"));
        assert_eq!(in_file.file(), Some(Path::new("app.toml")));
    }

    #[test]
    fn sources_are_kept() {
        let io = std::io::Error::new(std::io::ErrorKind::NotFound, "gone");
        let error = ConfigError::io(Path::new("x.toml"), io);
        assert_eq!(error.kind(), ConfigErrorKind::Io);
        assert_eq!(error.key(), None);
        let source = StdError::source(&error);
        assert!(source.is_some_and(|s| s.downcast_ref::<std::io::Error>().is_some()));
        assert_eq!(
            error.full_message(),
            "cannot read configuration file `x.toml`: gone"
        );
    }
}
