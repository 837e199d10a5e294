//! Liveness and readiness, without a token.

use std::time::SystemTime;

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;
use chrono::{DateTime, SecondsFormat, Utc};
use serde_json::{json, Value};

use ferrozone_http::error::ApiError;
use ferrozone_http::health::{DataPlaneHealth, RoutingHealth};
use ferrozone_http::{reply, AppState};

pub fn routes() -> Router<AppState> {
    Router::new().route("/healthz", get(healthz)).route("/livez", get(livez))
}

/// 200 when the database answers, with the data plane's state (`status` is `degraded`
/// while the last reconcile or the last pass over the nftables table failed, or peers are
/// refused over the backend's limit) and the
/// start-up warnings (which do not degrade it: the server works, for this machine at
/// least); 503 when the database does not answer.
async fn healthz(State(app): State<AppState>) -> Response {
    if let Err(e) = app.domain.check_storage().await {
        return ApiError::Unavailable(anyhow::Error::new(e)).into_response();
    }
    reply::json(StatusCode::OK, &report(&app.data_plane.health(), &app.warnings))
}

pub(crate) fn report(data_plane: &DataPlaneHealth, warnings: &[String]) -> Value {
    let routing_failed = matches!(data_plane.routing, RoutingHealth::Applied { last_pass_failed: true, .. });
    let refused = data_plane.peers_refused > 0;
    let status = if data_plane.last_reconcile_failed || routing_failed || refused { "degraded" } else { "ok" };
    json!({
        "status": status,
        "database": "ok",
        "data_plane": {
            "backend": data_plane.backend,
            "last_reconcile_at": data_plane.last_reconcile.map(timestamp),
            "last_reconcile_failed": data_plane.last_reconcile_failed,
            "peers_refused": data_plane.peers_refused,
        },
        "routing": routing(&data_plane.routing),
        "warnings": warnings,
    })
}

fn routing(health: &RoutingHealth) -> Value {
    match health {
        RoutingHealth::NotApplied { reason } => json!({"nftables": "not applied", "reason": reason}),
        RoutingHealth::Applied { rules, default_action, last_apply, last_pass_failed } => json!({
            "nftables": "applied",
            "rules": rules,
            "default_action": default_action,
            "last_apply_at": last_apply.map(timestamp),
            "last_pass_failed": last_pass_failed,
        }),
    }
}

fn timestamp(at: SystemTime) -> String {
    DateTime::<Utc>::from(at).to_rfc3339_opts(SecondsFormat::Micros, true)
}

/// 200 while the process serves HTTP; touches nothing else.
async fn livez() -> Response {
    reply::json(StatusCode::OK, &json!({"status": "ok"}))
}

#[cfg(test)]
mod tests {
    use std::time::{Duration, UNIX_EPOCH};

    use super::*;
    use ferrozone_http::health::{DataPlaneProbe, NoDataPlane};

    #[test]
    fn the_report_names_the_backend_and_the_last_reconcile() {
        let at = UNIX_EPOCH + Duration::from_micros(1_764_068_400_123_456);
        let routing =
            RoutingHealth::Applied { rules: 3, default_action: "drop", last_apply: Some(at), last_pass_failed: false };
        let healthy = DataPlaneHealth {
            backend: "kernel",
            last_reconcile: Some(at),
            last_reconcile_failed: false,
            peers_refused: 0,
            routing,
        };
        assert_eq!(
            report(&healthy, &[]),
            json!({"status": "ok", "database": "ok", "data_plane": {
                "backend": "kernel", "last_reconcile_at": "2025-11-25T11:00:00.123456Z", "last_reconcile_failed": false,
                "peers_refused": 0},
                "routing": {"nftables": "applied", "rules": 3, "default_action": "drop",
                "last_apply_at": "2025-11-25T11:00:00.123456Z", "last_pass_failed": false}, "warnings": []})
        );
        let full = DataPlaneHealth { peers_refused: 3, ..healthy.clone() };
        assert_eq!(report(&full, &[])["status"], "degraded", "peers refused over the backend's limit");
        assert_eq!(report(&full, &[])["data_plane"]["peers_refused"], 3);
        let failing = DataPlaneHealth { last_reconcile_failed: true, ..healthy.clone() };
        assert_eq!(report(&failing, &[])["status"], "degraded");
        assert_eq!(report(&failing, &[])["data_plane"]["last_reconcile_failed"], true);
        assert_eq!(report(&NoDataPlane.health(), &[])["data_plane"]["last_reconcile_at"], Value::Null);
    }

    #[test]
    fn a_failed_pass_over_the_table_degrades_the_status() {
        let routing =
            RoutingHealth::Applied { rules: 0, default_action: "accept", last_apply: None, last_pass_failed: true };
        let failing = DataPlaneHealth {
            backend: "userspace",
            last_reconcile: None,
            last_reconcile_failed: false,
            peers_refused: 0,
            routing,
        };
        assert_eq!(report(&failing, &[])["status"], "degraded");
        assert_eq!(report(&failing, &[])["routing"]["last_pass_failed"], true);
        assert_eq!(report(&failing, &[])["routing"]["last_apply_at"], Value::Null);
    }

    #[test]
    fn start_up_warnings_are_listed_and_leave_the_status_ok() {
        let warnings = ["FERROZONE_EXTERNAL_URL is http://localhost:13000".to_owned()];
        let report = report(&NoDataPlane.health(), &warnings);
        assert_eq!(report["warnings"], json!(["FERROZONE_EXTERNAL_URL is http://localhost:13000"]));
        assert_eq!(report["status"], "ok");
    }

    #[test]
    fn without_a_backend_nothing_is_applied_and_the_report_says_why() {
        assert_eq!(
            report(&NoDataPlane.health(), &[])["routing"],
            json!({"nftables": "not applied", "reason": "the WireGuard backend is none: nothing is enforced"})
        );
        assert_eq!(report(&NoDataPlane.health(), &[])["status"], "ok");
    }
}
