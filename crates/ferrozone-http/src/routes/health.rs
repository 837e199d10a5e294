//! Liveness and readiness, without a token.

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;
use serde_json::json;

use crate::error::ApiError;
use crate::{reply, AppState};

pub fn routes() -> Router<AppState> {
    Router::new().route("/healthz", get(healthz)).route("/livez", get(livez))
}

/// 200 when the database answers, 503 when it does not.
async fn healthz(State(app): State<AppState>) -> Response {
    match app.domain.store().ping().await {
        Ok(()) => reply::json(StatusCode::OK, &json!({"status": "ok"})),
        Err(e) => ApiError::Unavailable(anyhow::Error::new(e)).into_response(),
    }
}

/// 200 while the process serves HTTP; touches nothing else.
async fn livez() -> Response {
    reply::json(StatusCode::OK, &json!({"status": "ok"}))
}
