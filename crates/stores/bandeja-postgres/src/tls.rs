//! The TLS parameters of a PostgreSQL URL, checked before sqlx sees them: sqlx calls a bad
//! `sslmode` "`ssl_mode`", and reports a missing `sslrootcert` file only once connected, as
//! "error communicating with database: No such file or directory". [`check_tls_parameters`]
//! names the parameter and says what to give instead; [`tls_failure_hint`] says what to do
//! when the server's certificate was refused. Neither ever repeats the URL (it may hold a
//! password).

/// The values of `sslmode` (libpq's and sqlx's).
const SSL_MODES: [&str; 6] = [
    "disable",
    "allow",
    "prefer",
    "require",
    "verify-ca",
    "verify-full",
];

/// The names sqlx reads the root certificate from in a URL.
const ROOT_CERT_KEYS: [&str; 3] = ["sslrootcert", "ssl-root-cert", "ssl-ca"];

/// A TLS parameter of a PostgreSQL URL (or `PGSSLROOTCERT`) that cannot work.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct TlsParameterError(String);

/// Checks the `sslmode` and `sslrootcert` (also `ssl-mode`, `ssl-root-cert`, `ssl-ca`) of
/// `url`, and `PGSSLROOTCERT` when the URL names no root certificate: a known mode, and a
/// root certificate that is PEM text or a readable PEM file holding at least one
/// certificate (sqlx would silently skip a file that holds none).
pub fn check_tls_parameters(url: &str) -> Result<(), TlsParameterError> {
    let pairs = query_pairs(url);
    for (key, value) in &pairs {
        if (key == "sslmode" || key == "ssl-mode")
            && !SSL_MODES.contains(&value.to_ascii_lowercase().as_str())
        {
            return Err(TlsParameterError(format!(
                "{key}={value}: not a TLS mode; use one of {}",
                SSL_MODES.join(", ")
            )));
        }
    }
    let from_url = pairs
        .iter()
        .find(|(key, _)| ROOT_CERT_KEYS.contains(&key.as_str()));
    match from_url {
        Some((key, value)) => check_root_cert(key, value),
        None => match std::env::var("PGSSLROOTCERT") {
            Ok(value) => check_root_cert("PGSSLROOTCERT", &value),
            Err(_) => Ok(()),
        },
    }
}

/// Checks that `value` (of parameter `name`) is PEM text or a readable PEM file holding at
/// least one certificate.
fn check_root_cert(name: &str, value: &str) -> Result<(), TlsParameterError> {
    const BEGIN: &str = "-----BEGIN CERTIFICATE-----";
    if value.trim_start().starts_with("-----BEGIN") {
        return Ok(());
    }
    let what = "give the path of a PEM file with the certificate of the CA that signed the \
                server's certificate (your provider's CA bundle for a managed database)";
    match std::fs::read(value) {
        Ok(pem) if String::from_utf8_lossy(&pem).contains(BEGIN) => Ok(()),
        Ok(_) => Err(TlsParameterError(format!(
            "{name}={value}: the file holds no certificate ({BEGIN}): {what}"
        ))),
        Err(e) => Err(TlsParameterError(format!(
            "{name}={value}: cannot read the file ({e}): {what}"
        ))),
    }
}

/// What to do, when `reason` (a failed connection's error text) says TLS refused the
/// server's certificate (rustls's own words, such as "invalid peer certificate:
/// UnknownIssuer", do not say).
pub fn tls_failure_hint(reason: &str) -> Option<&'static str> {
    reason.contains("invalid peer certificate").then_some(
        "the server's certificate is not trusted: with sslmode=verify-ca or verify-full it \
         must be signed by a CA of sslrootcert=/path/ca.pem (or of the system's trust store) \
         and, with verify-full, name the URL's host",
    )
}

/// The `key=value` pairs of the query of `url`, percent-decoded as sqlx decodes them.
fn query_pairs(url: &str) -> Vec<(String, String)> {
    let Some((_, query)) = url.split_once('?') else {
        return Vec::new();
    };
    let query = query.split('#').next().unwrap_or_default();
    query
        .split('&')
        .filter(|pair| !pair.is_empty())
        .map(|pair| {
            let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
            (percent_decode(key), percent_decode(value))
        })
        .collect()
}

/// `application/x-www-form-urlencoded` decoding: `+` is a space, `%XX` a byte; a `%` not
/// followed by two hex digits stays as it is.
fn percent_decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = bytes
            .get(i + 1..i + 3)
            .filter(|h| h.iter().all(u8::is_ascii_hexdigit))
            .and_then(|h| std::str::from_utf8(h).ok())
            .and_then(|h| u8::from_str_radix(h, 16).ok());
        match (bytes[i], hex) {
            (b'%', Some(byte)) => {
                out.push(byte);
                i += 3;
            }
            (b'+', _) => {
                out.push(b' ');
                i += 1;
            }
            (byte, _) => {
                out.push(byte);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn query_pairs_are_decoded() {
        assert_eq!(
            query_pairs("postgres://h/d?sslmode=verify-full&sslrootcert=%2Ftmp%2Fmy+ca.pem#x"),
            [
                ("sslmode".to_owned(), "verify-full".to_owned()),
                ("sslrootcert".to_owned(), "/tmp/my ca.pem".to_owned()),
            ]
        );
        assert!(query_pairs("postgres://h/d").is_empty());
        assert_eq!(percent_decode("100%"), "100%");
        assert_eq!(percent_decode("%+f%41"), "% fA");
    }

    #[test]
    fn a_bad_sslmode_names_the_parameter_and_the_modes() {
        for mode in ["disable", "Prefer", "verify-full"] {
            let url = format!("postgres://u@h/d?sslmode={mode}");
            assert!(check_tls_parameters(&url).is_ok(), "{mode}");
        }
        let error = check_tls_parameters("postgres://u:pw@h/d?sslmode=verify_full")
            .expect_err("not a mode");
        let text = error.to_string();
        assert!(
            text.starts_with("sslmode=verify_full: not a TLS mode"),
            "{text}"
        );
        assert!(text.contains("verify-ca, verify-full"), "{text}");
        assert!(!text.contains("pw"), "{text}");
    }

    #[test]
    fn a_missing_or_empty_sslrootcert_names_the_parameter_and_the_file() {
        let error = check_tls_parameters("postgres://h/d?sslrootcert=/no/such/ca.pem")
            .expect_err("no such file");
        let text = error.to_string();
        assert!(
            text.starts_with("sslrootcert=/no/such/ca.pem: cannot read the file"),
            "{text}"
        );
        let error = check_tls_parameters("postgres://h/d?ssl-ca=Cargo.toml")
            .expect_err("not a certificate");
        assert!(
            error
                .to_string()
                .starts_with("ssl-ca=Cargo.toml: the file holds no certificate"),
            "{error}"
        );
        assert!(tls_failure_hint("invalid peer certificate: UnknownIssuer").is_some());
        assert!(tls_failure_hint("connection refused").is_none());
    }
}
