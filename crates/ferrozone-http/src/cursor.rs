//! The `page_cursor` of every list paged in creation order (`/v0/devices`, `/v0/users`,
//! `/v0/tokens?all=true`, and the pages that show those lists): the position
//! `(inserted_at, id)` of the last row shown, as base64url of `<micros>:<uuid>`. Clients
//! treat it as opaque; decoding checks its whole shape, so a damaged cursor is refused
//! rather than read as some other position.

pub mod users;

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use ferrozone_domain::Timestamp;
use uuid::Uuid;

use crate::error::ApiError;

/// The cursor that continues a list after the row created at `inserted_at` with `id`.
pub fn encode(inserted_at: Timestamp, id: Uuid) -> String {
    URL_SAFE_NO_PAD.encode(format!("{}:{id}", inserted_at.micros()))
}

/// The position `text` names, or `None` when it names none: not base64url, cut short, or
/// not a time and an id.
pub fn decode(text: &str) -> Option<(Timestamp, Uuid)> {
    let decoded = String::from_utf8(URL_SAFE_NO_PAD.decode(text).ok()?).ok()?;
    let (micros, id) = decoded.split_once(':')?;
    Some((Timestamp::from_micros(micros.parse().ok()?), Uuid::parse_str(id).ok()?))
}

/// The `page_cursor` of a `/v0` query; one that names no position is a 400 saying so.
pub fn from_query(text: &str) -> Result<(Timestamp, Uuid), ApiError> {
    decode(text).ok_or_else(|| ApiError::BadRequest("`page_cursor` is invalid".to_owned()))
}

#[cfg(test)]
mod tests {
    use axum::http::StatusCode;
    use axum::response::IntoResponse;

    use super::*;

    fn position() -> (Timestamp, Uuid) {
        (
            Timestamp::from_micros(1_764_160_000_123_456),
            Uuid::parse_str("0193a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b").unwrap(),
        )
    }

    fn refused(text: &str) -> bool {
        let status = from_query(text).map_err(|e| e.into_response().status());
        decode(text).is_none() && status == Err(StatusCode::BAD_REQUEST)
    }

    #[test]
    fn a_cursor_decodes_to_the_position_it_encodes() {
        let (at, id) = position();
        let cursor = encode(at, id);
        // The form is fixed: cursors already handed out must keep working.
        assert_eq!(cursor, "MTc2NDE2MDAwMDEyMzQ1NjowMTkzYTFiMi1jM2Q0LTdlNWYtOGE5Yi0wYzFkMmUzZjRhNWI");
        assert_eq!(decode(&cursor), Some((at, id)));
        assert_eq!(from_query(&cursor).ok(), Some((at, id)));
        assert_eq!(
            decode(&encode(Timestamp::from_micros(-1), Uuid::nil())),
            Some((Timestamp::from_micros(-1), Uuid::nil()))
        );
    }

    #[test]
    fn garbage_is_a_bad_request() {
        for text in ["", "nope", "%%%", "not a cursor", "MTc2NDE2MDAwMDEyMzQ1Ng=="] {
            assert!(refused(text), "{text:?}");
        }
    }

    #[test]
    fn a_truncated_cursor_is_a_bad_request() {
        let cursor = encode(position().0, position().1);
        for cut in 1..cursor.len() {
            assert!(refused(&cursor[..cursor.len() - cut]), "{cut} characters cut");
        }
    }

    #[test]
    fn base64_of_another_shape_is_a_bad_request() {
        let id = position().1;
        let shapes = [
            format!("{id}"),
            format!("12:{id}:3"),
            format!("soon:{id}"),
            "12:not-a-uuid".to_owned(),
            format!("{id}:12"),
        ];
        for shape in shapes {
            assert!(refused(&URL_SAFE_NO_PAD.encode(&shape)), "{shape}");
        }
        assert!(refused(&URL_SAFE_NO_PAD.encode([0xff, 0xfe, b':', b'1'])), "not UTF-8");
    }
}
