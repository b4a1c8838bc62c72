//! Choosing the log filter: `BANDEJA_LOG`, else `RUST_LOG`, else the binary's default; a
//! value that is invalid (or names a level misspelt) is rejected for `info`, with a report.

use tracing_subscriber::EnvFilter;

use super::{FALLBACK_FILTER, FILTER_VAR};

/// The level names `EnvFilter` knows.
const LEVELS: [&str; 6] = ["trace", "debug", "info", "warn", "error", "off"];

/// A filter variable whose value was not used.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Rejected {
    /// The variable.
    pub(crate) variable: &'static str,
    /// What it held.
    pub(crate) value: String,
    /// Why it was not used.
    pub(crate) error: String,
}

impl Rejected {
    /// Logs the report (once the logger is installed): a WARN line naming the variable,
    /// with the value and the error as fields.
    pub(crate) fn log(&self) {
        tracing::warn!(
            value = %self.value,
            error = %self.error,
            "{} is not a valid log filter: logging at `{FALLBACK_FILTER}` instead",
            self.variable,
        );
    }
}

/// The filter from `bandeja_log` (the value of [`FILTER_VAR`]), else `rust_log`, else
/// `default`; an invalid one is replaced by [`FALLBACK_FILTER`] and reported.
pub(crate) fn choose(
    bandeja_log: Option<String>,
    rust_log: Option<String>,
    default: &str,
) -> (EnvFilter, Option<Rejected>) {
    let set = |value: Option<String>| value.filter(|v| !v.trim().is_empty());
    let (variable, value) = match (set(bandeja_log), set(rust_log)) {
        (Some(value), _) => (FILTER_VAR, value),
        (None, Some(value)) => ("RUST_LOG", value),
        (None, None) => match parse(default) {
            Ok(filter) => return (filter, None),
            Err(error) => {
                let rejected = Rejected {
                    variable: "the default filter",
                    value: default.to_owned(),
                    error,
                };
                return (EnvFilter::new(FALLBACK_FILTER), Some(rejected));
            }
        },
    };
    match parse(&value) {
        Ok(filter) => (filter, None),
        Err(error) => (
            EnvFilter::new(FALLBACK_FILTER),
            Some(Rejected {
                variable,
                value,
                error,
            }),
        ),
    }
}

/// Parses `directives`, refusing a bare word that is a misspelt level.
fn parse(directives: &str) -> Result<EnvFilter, String> {
    for directive in directives.split(',').map(str::trim) {
        if let Some(level) = misspelt_level(directive) {
            return Err(format!(
                "`{directive}` is not a level: did you mean `{level}`? (to name a target \
                 spelt like that, give its level: `{directive}=trace`)"
            ));
        }
    }
    EnvFilter::builder()
        .parse(directives)
        .map_err(|e| e.to_string())
}

/// The level a bare word (no `=`, `[`, `::`) is a letter away from (two, for words of five
/// letters or more), when it is not a level itself.
fn misspelt_level(directive: &str) -> Option<&'static str> {
    if directive.is_empty() || directive.contains(['=', '[', ']', ':', '{', '}']) {
        return None;
    }
    let word = directive.to_ascii_lowercase();
    if LEVELS.contains(&word.as_str()) || word.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let most = if word.len() <= 4 { 1 } else { 2 };
    LEVELS
        .into_iter()
        .map(|level| (distance(&word, level), level))
        .filter(|&(d, level)| d <= most && d < level.len())
        .min_by_key(|&(d, _)| d)
        .map(|(_, level)| level)
}

/// Edit distance (insertions, deletions, substitutions) between two ASCII words.
fn distance(a: &str, b: &str) -> usize {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, &x) in a.iter().enumerate() {
        let mut diagonal = row[0];
        row[0] = i + 1;
        for (j, &y) in b.iter().enumerate() {
            let substituted = diagonal + usize::from(x != y);
            diagonal = row[j + 1];
            row[j + 1] = substituted.min(row[j] + 1).min(row[j + 1] + 1);
        }
    }
    row[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chosen(bandeja_log: &str) -> (String, Option<Rejected>) {
        let (filter, rejected) = choose(Some(bandeja_log.to_owned()), None, "warn");
        (filter.to_string(), rejected)
    }

    #[test]
    fn a_valid_filter_is_used_as_given() {
        assert_eq!(chosen("debug"), ("debug".to_owned(), None));
        let (filter, rejected) = chosen("warn,bandeja_core=debug");
        assert!(rejected.is_none(), "{rejected:?}");
        assert!(filter.contains("bandeja_core=debug"), "{filter}");
        // A target alone is a filter too (everything of that target).
        assert_eq!(chosen("sqlx").1, None);
    }

    #[test]
    fn an_invalid_or_misspelt_filter_falls_back_to_info_with_a_report() {
        for bad in ["bandeja=verbose", "debgu", "inf", "warn,eror"] {
            let (filter, rejected) = chosen(bad);
            assert_eq!(filter, "info", "{bad}");
            let rejected = rejected.unwrap_or_else(|| panic!("{bad} accepted"));
            assert_eq!(rejected.variable, "BANDEJA_LOG");
            assert_eq!(rejected.value, bad);
            assert!(!rejected.error.is_empty());
        }
        let misspelt = chosen("debgu").1.map(|r| r.error).unwrap_or_default();
        assert!(misspelt.contains("did you mean `debug`"), "{misspelt}");
    }

    #[test]
    fn unset_falls_to_rust_log_then_to_the_default() {
        let (filter, rejected) = choose(None, Some("error".to_owned()), "warn");
        assert_eq!((filter.to_string(), rejected), ("error".to_owned(), None));
        let (filter, rejected) = choose(Some(" ".to_owned()), None, "warn");
        assert_eq!((filter.to_string(), rejected), ("warn".to_owned(), None));
        let (_, rejected) = choose(None, Some("nope=loud".to_owned()), "warn");
        assert_eq!(rejected.map(|r| r.variable), Some("RUST_LOG"));
    }

    #[test]
    fn distances() {
        assert_eq!(distance("debgu", "debug"), 2);
        assert_eq!(distance("inf", "info"), 1);
        assert_eq!(distance("sqlx", "off"), 4);
        assert_eq!(misspelt_level("tower"), None);
        assert_eq!(misspelt_level("mio"), None);
        assert_eq!(misspelt_level("bandeja_core"), None);
        assert_eq!(misspelt_level("WARN"), None);
    }
}
