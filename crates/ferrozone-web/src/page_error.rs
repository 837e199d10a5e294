//! Failures of the web pages' handlers, answered as HTML: a browser gets a page, never the
//! API's JSON, with the status (and `Retry-After`) the API would give.

use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use ferrozone_domain::DomainError;

use super::html;
use ferrozone_http::error::ApiError;

/// What a web handler fails with: an [`ApiError`], answered as a page.
#[derive(Debug)]
pub struct PageError(ApiError);

impl From<ApiError> for PageError {
    fn from(e: ApiError) -> Self {
        Self(e)
    }
}

impl From<DomainError> for PageError {
    fn from(e: DomainError) -> Self {
        Self(e.into())
    }
}

impl IntoResponse for PageError {
    fn into_response(self) -> Response {
        // The API's answer decides the status and `Retry-After`, and logs the cause.
        let api = self.0.into_response();
        page(api.status(), api.headers().get(header::RETRY_AFTER).cloned())
    }
}

/// The answer to a path no route knows.
pub fn not_found() -> Response {
    page(StatusCode::NOT_FOUND, None)
}

/// The answer to a request with a method a web page does not take.
pub async fn method_not_allowed() -> Response {
    page(StatusCode::METHOD_NOT_ALLOWED, None)
}

/// A page saying what went wrong, in words for the person at the browser.
fn page(status: StatusCode, retry_after: Option<HeaderValue>) -> Response {
    let (title, text) = words(status);
    let mut response = html::response(status, html::message(title, text));
    if let Some(secs) = retry_after {
        response.headers_mut().insert(header::RETRY_AFTER, secs);
    }
    response
}

fn words(status: StatusCode) -> (&'static str, &'static str) {
    match status {
        StatusCode::BAD_REQUEST => ("Bad request", "The request could not be read. Please go back and try again."),
        StatusCode::UNAUTHORIZED | StatusCode::FORBIDDEN => ("Not allowed", "You are not allowed to do this."),
        StatusCode::NOT_FOUND => ("Not found", "There is no such page."),
        StatusCode::METHOD_NOT_ALLOWED => ("Not allowed", "This page cannot be used that way."),
        StatusCode::PAYLOAD_TOO_LARGE => ("Request too large", "The form sent is larger than this server accepts."),
        StatusCode::UNSUPPORTED_MEDIA_TYPE => ("Not a form", "The request was not sent as a form."),
        StatusCode::UNPROCESSABLE_ENTITY => ("Refused", "The request was refused. Please go back and try again."),
        StatusCode::SERVICE_UNAVAILABLE => {
            ("Try again", "The server cannot answer right now. Please try again in a few seconds.")
        }
        _ => ("Something went wrong", "The error is logged. Please try again later."),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_api_error_becomes_a_page_with_its_status() {
        let unavailable = PageError(ApiError::Unavailable(anyhow::anyhow!("down"))).into_response();
        assert_eq!(unavailable.status(), StatusCode::SERVICE_UNAVAILABLE);
        assert_eq!(unavailable.headers()[header::RETRY_AFTER], "5");
        assert_eq!(unavailable.headers()[header::CONTENT_TYPE], "text/html; charset=utf-8");
        let internal = PageError(ApiError::Internal(anyhow::anyhow!("bug"))).into_response();
        assert_eq!(internal.status(), StatusCode::INTERNAL_SERVER_ERROR);
        assert!(internal.headers().get(header::RETRY_AFTER).is_none());
        assert!(internal.headers().get(header::WWW_AUTHENTICATE).is_none());
    }
}
