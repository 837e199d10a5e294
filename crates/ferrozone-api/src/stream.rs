//! The whole device collection as one response, rendered batch by batch while the store
//! reads it: the server holds one batch of devices and its JSON at a time, however many
//! devices there are, and the first bytes leave before the last row is read.

use std::sync::Arc;

use axum::body::{Body, Bytes};
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::Response;
use ferrozone_domain::store::DeviceBatches;
use ferrozone_domain::{Device, Domain};

use crate::dto::DeviceDto;
use ferrozone_http::error::ApiError;
use ferrozone_http::reply::JSON_UTF8;

/// `{"data":[…]}` from `batches`. A failure before the first batch is an ordinary error
/// response. A failure after the status line has gone out cuts the connection, so the
/// client sees a truncated body instead of a complete-looking, wrong one.
pub async fn device_list(domain: Arc<Domain>, mut batches: DeviceBatches) -> Result<Response, ApiError> {
    let first = batches.recv().await.transpose()?;
    let mut renderer = Renderer { domain, batches, empty: true };
    let mut head = b"{\"data\":[".to_vec();
    match first {
        Some(devices) => renderer.render(&mut head, devices)?,
        None => return Ok(respond(Body::from(r#"{"data":[]}"#))),
    }
    let rest = futures_util::stream::unfold(Some(renderer), |renderer| async move {
        let mut renderer = renderer?;
        let mut chunk = Vec::new();
        let next = match renderer.batches.recv().await {
            None => {
                chunk.extend_from_slice(b"]}");
                return Some((Ok(Bytes::from(chunk)), None));
            }
            Some(batch) => batch.map_err(ApiError::from).and_then(|devices| renderer.render(&mut chunk, devices)),
        };
        match next {
            Ok(()) => Some((Ok(Bytes::from(chunk)), Some(renderer))),
            Err(e) => {
                tracing::error!(error = ?e, "a device list failed after its first bytes; the response is cut short");
                Some((Err(e), None))
            }
        }
    });
    let head = futures_util::stream::once(std::future::ready(Ok::<_, ApiError>(Bytes::from(head))));
    Ok(respond(Body::from_stream(futures_util::StreamExt::chain(head, rest))))
}

fn respond(body: Body) -> Response {
    let mut response = Response::new(body);
    *response.status_mut() = StatusCode::OK;
    response.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static(JSON_UTF8));
    response
}

struct Renderer {
    domain: Arc<Domain>,
    batches: DeviceBatches,
    /// No device has been written yet (no comma before the next).
    empty: bool,
}

impl Renderer {
    fn render(&mut self, out: &mut Vec<u8>, devices: Vec<Device>) -> Result<(), ApiError> {
        out.reserve(devices.len() * 768);
        for device in devices {
            if !std::mem::take(&mut self.empty) {
                out.push(b',');
            }
            let dto = DeviceDto::new(&self.domain, device)?;
            serde_json::to_writer(&mut *out, &dto).map_err(|e| ApiError::Internal(e.into()))?;
        }
        Ok(())
    }
}
