//! JSON responses with the content type the API promises.

use std::cell::RefCell;

use axum::body::Bytes;
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use serde::Serialize;

pub const JSON_UTF8: &str = "application/json; charset=utf-8";

/// The largest scratch buffer a thread keeps between responses; a larger one is dropped.
const SCRATCH_KEPT: usize = 64 * 1024;

/// Serialises `body` with `status` and `Content-Type: application/json; charset=utf-8`.
pub fn json(status: StatusCode, body: &impl Serialize) -> Response {
    match to_bytes(body) {
        Ok(bytes) => (status, [(header::CONTENT_TYPE, HeaderValue::from_static(JSON_UTF8))], bytes).into_response(),
        Err(e) => {
            tracing::error!(error = %e, "serialising a response failed");
            (
                StatusCode::INTERNAL_SERVER_ERROR,
                [(header::CONTENT_TYPE, HeaderValue::from_static(JSON_UTF8))],
                br#"{"error":"internal_error"}"#.as_slice(),
            )
                .into_response()
        }
    }
}

/// 201 with a `Location` header.
pub fn created(location: String, body: &impl Serialize) -> Response {
    let mut response = json(StatusCode::CREATED, body);
    if let Ok(value) = HeaderValue::from_str(&location) {
        response.headers_mut().insert(header::LOCATION, value);
    }
    response
}

thread_local! {
    /// The buffer `to_bytes` serialises into, reused by every response on this thread.
    static SCRATCH: RefCell<Vec<u8>> = const { RefCell::new(Vec::new()) };
}

/// Serialises `body` into this thread's reusable buffer and copies it out at its exact size:
/// one allocation per response. `serde_json::to_vec` would grow a new vector from 128 bytes,
/// four allocations for a device, the last of them large enough that glibc consolidates its
/// free lists (docs/benchmarks.md, "Where the time goes").
pub fn to_bytes(body: &impl Serialize) -> serde_json::Result<Bytes> {
    SCRATCH.with_borrow_mut(|buf| {
        buf.clear();
        let bytes = serde_json::to_writer(&mut *buf, body).map(|()| Bytes::copy_from_slice(buf));
        if buf.capacity() > SCRATCH_KEPT {
            *buf = Vec::new();
        }
        bytes
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_body_is_the_json_of_its_own_value() {
        let values = [
            serde_json::json!({"data": "x".repeat(2 * SCRATCH_KEPT)}),
            serde_json::json!({"data": {"name": "laptop"}}),
            serde_json::json!([]),
        ];
        for value in values {
            assert_eq!(to_bytes(&value).unwrap(), serde_json::to_vec(&value).unwrap());
        }
    }

    #[test]
    fn the_scratch_buffer_keeps_small_bodies_room_only() {
        to_bytes(&"small").unwrap();
        let small = SCRATCH.with_borrow(Vec::capacity);
        assert!(small > 0 && small <= SCRATCH_KEPT);
        to_bytes(&"y".repeat(2 * SCRATCH_KEPT)).unwrap();
        assert!(SCRATCH.with_borrow(Vec::capacity) <= SCRATCH_KEPT);
    }

    #[test]
    fn a_failed_serialisation_is_an_error() {
        let map: std::collections::HashMap<(u8, u8), u8> = [((1, 2), 3)].into();
        assert!(to_bytes(&map).is_err());
        assert_eq!(to_bytes(&"after").unwrap(), "\"after\"".as_bytes());
    }
}
