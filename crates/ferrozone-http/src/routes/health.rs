//! Liveness and readiness, without a token.

use std::time::SystemTime;

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;
use chrono::{DateTime, SecondsFormat, Utc};
use serde_json::{json, Value};

use crate::error::ApiError;
use crate::{reply, AppState};

/// The WireGuard data plane as `/healthz` reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DataPlaneHealth {
    /// `kernel`, `userspace` or `none` (nothing is enforced).
    pub backend: &'static str,
    /// When the reconciler last brought the interface in line with the database.
    pub last_reconcile: Option<SystemTime>,
    /// Whether the reconciler's latest pass failed.
    pub last_reconcile_failed: bool,
}

/// Where `/healthz` reads the data plane's state.
pub trait DataPlaneProbe: Send + Sync + 'static {
    fn health(&self) -> DataPlaneHealth;
}

/// A process without a data plane (the API alone, and tests).
pub struct NoDataPlane;

impl DataPlaneProbe for NoDataPlane {
    fn health(&self) -> DataPlaneHealth {
        DataPlaneHealth { backend: "none", last_reconcile: None, last_reconcile_failed: false }
    }
}

pub fn routes() -> Router<AppState> {
    Router::new().route("/healthz", get(healthz)).route("/livez", get(livez))
}

/// 200 when the database answers, with the data plane's state (`status` is `degraded`
/// while the last reconcile failed); 503 when the database does not answer.
async fn healthz(State(app): State<AppState>) -> Response {
    if let Err(e) = app.domain.check_storage().await {
        return ApiError::Unavailable(anyhow::Error::new(e)).into_response();
    }
    reply::json(StatusCode::OK, &report(&app.data_plane.health()))
}

fn report(data_plane: &DataPlaneHealth) -> Value {
    let status = if data_plane.last_reconcile_failed { "degraded" } else { "ok" };
    let last_reconcile =
        data_plane.last_reconcile.map(|at| DateTime::<Utc>::from(at).to_rfc3339_opts(SecondsFormat::Micros, true));
    json!({
        "status": status,
        "database": "ok",
        "data_plane": {
            "backend": data_plane.backend,
            "last_reconcile_at": last_reconcile,
            "last_reconcile_failed": data_plane.last_reconcile_failed,
        },
    })
}

/// 200 while the process serves HTTP; touches nothing else.
async fn livez() -> Response {
    reply::json(StatusCode::OK, &json!({"status": "ok"}))
}

#[cfg(test)]
mod tests {
    use std::time::{Duration, UNIX_EPOCH};

    use super::*;

    #[test]
    fn the_report_names_the_backend_and_the_last_reconcile() {
        let at = UNIX_EPOCH + Duration::from_micros(1_764_068_400_123_456);
        let healthy = DataPlaneHealth { backend: "kernel", last_reconcile: Some(at), last_reconcile_failed: false };
        assert_eq!(
            report(&healthy),
            json!({"status": "ok", "database": "ok", "data_plane": {
                "backend": "kernel", "last_reconcile_at": "2025-11-25T11:00:00.123456Z", "last_reconcile_failed": false}})
        );
        let failing = DataPlaneHealth { last_reconcile_failed: true, ..healthy };
        assert_eq!(report(&failing)["status"], "degraded");
        assert_eq!(report(&failing)["data_plane"]["last_reconcile_failed"], true);
        assert_eq!(report(&NoDataPlane.health())["data_plane"]["last_reconcile_at"], Value::Null);
    }
}
