//! The token checks: state-changing endpoints always need the admin token; message
//! listings need it when one is configured.

use axum::http::{header, HeaderMap};

use crate::error::ApiError;
use crate::options::HttpOptions;

/// The bearer token of a request, if any.
fn bearer(headers: &HeaderMap) -> Option<&str> {
    let value = headers.get(header::AUTHORIZATION)?.to_str().ok()?.trim();
    let (scheme, token) = value.split_once(' ')?;
    scheme
        .eq_ignore_ascii_case("bearer")
        .then_some(token.trim())
}

/// For state-changing endpoints: a configured token, presented by the request.
pub(crate) fn require_token(options: &HttpOptions, headers: &HeaderMap) -> Result<(), ApiError> {
    let Some(token) = &options.token else {
        return Err(ApiError::NoTokenConfigured);
    };
    match bearer(headers) {
        None => Err(ApiError::MissingToken),
        Some(given) if token.matches(given) => Ok(()),
        Some(_) => Err(ApiError::WrongToken),
    }
}

/// For reads of message contents: the token when one is configured.
pub(crate) fn allow_read(options: &HttpOptions, headers: &HeaderMap) -> Result<(), ApiError> {
    if options.token.is_some() {
        require_token(options, headers)
    } else {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;

    fn with_auth(value: &'static str) -> HeaderMap {
        let mut headers = HeaderMap::new();
        headers.insert(header::AUTHORIZATION, HeaderValue::from_static(value));
        headers
    }

    #[test]
    fn bearer_tokens_are_checked() {
        let options = HttpOptions::new().token("t0k");
        assert!(require_token(&options, &with_auth("Bearer t0k")).is_ok());
        assert!(require_token(&options, &with_auth("bearer t0k")).is_ok());
        assert!(matches!(
            require_token(&options, &with_auth("Bearer nope")),
            Err(ApiError::WrongToken)
        ));
        assert!(matches!(
            require_token(&options, &with_auth("Basic t0k")),
            Err(ApiError::MissingToken)
        ));
        assert!(matches!(
            require_token(&options, &HeaderMap::new()),
            Err(ApiError::MissingToken)
        ));
        assert!(matches!(
            require_token(&HttpOptions::new(), &with_auth("Bearer t0k")),
            Err(ApiError::NoTokenConfigured)
        ));
        assert!(allow_read(&HttpOptions::new(), &HeaderMap::new()).is_ok());
        assert!(allow_read(&options, &HeaderMap::new()).is_err());
    }
}
