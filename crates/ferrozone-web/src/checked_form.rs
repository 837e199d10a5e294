//! [`CheckedForm`]: a form posted by a signed-in viewer that carries the session's CSRF
//! token. Every form of the portal and the console takes its fields through it, so no
//! handler can forget the check, and a refused form has done nothing by construction: the
//! handler never runs.

use std::collections::HashMap;

use axum::extract::{FromRequest, FromRequestParts, Request};
use axum::http::request::Parts;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

use super::html;
use super::page_error::PageError;
use super::viewer::{SessionCsrf, Viewer};
use ferrozone_http::cookies::same_secret;
use ferrozone_http::error::ApiError;
use ferrozone_http::extract::FormFields;
use ferrozone_http::AppState;

/// A form's fields by name; a name sent twice keeps its first value.
pub type Fields = HashMap<String, String>;

/// The fields of an urlencoded form as `T` (any type that deserializes from a map of
/// strings; [`Fields`] as they are), once the form's `csrf_token` field is this session's.
///
/// Otherwise the handler does not run, and the answer is: without a session, the viewer's
/// (to the sign-in page); a body that is not a form, its error page (415, 413, …); a wrong
/// or missing token, a 403 page saying nothing was changed; fields that are not a `T`, a
/// 400 page. Take it after the handler's [`Viewer`] or `AdminViewer`, which then decides
/// first, and whose session it reuses.
pub struct CheckedForm<T = Fields>(pub T);

impl<T: DeserializeOwned> FromRequest<AppState> for CheckedForm<T> {
    type Rejection = Response;

    async fn from_request(req: Request, app: &AppState) -> Result<Self, Response> {
        let (mut parts, body) = req.into_parts();
        let expected = session_csrf(&mut parts, app).await?;
        let FormFields(fields) = FormFields::from_request(Request::from_parts(parts, body), app).await.map_err(page)?;
        if !same_secret(fields.get("csrf_token").map(String::as_str), &expected) {
            return Err(csrf_refused());
        }
        read(fields).map(CheckedForm).map_err(page)
    }
}

/// The CSRF token of the viewer's session: the one its extractor kept, else (no viewer
/// taken before) the viewer's, or the answer of a request without one.
async fn session_csrf(parts: &mut Parts, app: &AppState) -> Result<String, Response> {
    if let Some(SessionCsrf(token)) = parts.extensions.get::<SessionCsrf>() {
        return Ok(token.clone());
    }
    let viewer = Viewer::from_request_parts(parts, app).await.map_err(IntoResponse::into_response)?;
    Ok(viewer.session.csrf_token)
}

/// `fields` as a `T`: through a JSON object of strings, so that an `Option<String>` field
/// is `Some` when sent and `None` when not, and a map of strings is the fields themselves.
fn read<T: DeserializeOwned>(fields: Fields) -> Result<T, ApiError> {
    let object = fields.into_iter().map(|(name, value)| (name, Value::String(value))).collect::<Map<_, _>>();
    T::deserialize(Value::Object(object)).map_err(|e| ApiError::BadRequest(format!("malformed form: {e}")))
}

/// The values of a field that holds a list: separated by commas, spaces or lines.
pub fn items(text: &str) -> Vec<String> {
    text.split([',', ' ', '\n', '\r']).filter(|v| !v.is_empty()).map(str::to_owned).collect()
}

fn page(e: ApiError) -> Response {
    PageError::from(e).into_response()
}

/// The page answering a form posted without the session's CSRF token: nothing was done.
fn csrf_refused() -> Response {
    let page = html::message(
        "Not done",
        "The form did not carry this session's security token, so nothing was changed. Reload the page and try again.",
    );
    html::response(StatusCode::FORBIDDEN, page)
}

#[cfg(test)]
mod tests {
    use serde::Deserialize;

    use super::*;

    fn fields(pairs: &[(&str, &str)]) -> Fields {
        pairs.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect()
    }

    #[derive(Deserialize, Debug, PartialEq)]
    struct Code {
        #[serde(default)]
        code: String,
        password: Option<String>,
    }

    #[test]
    fn fields_read_as_themselves() {
        let sent = fields(&[("csrf_token", "t"), ("role", "admin")]);
        assert_eq!(read::<Fields>(sent.clone()).unwrap(), sent);
    }

    #[test]
    fn fields_read_as_a_struct_ignoring_the_others() {
        let sent = fields(&[("csrf_token", "t"), ("code", "123456")]);
        assert_eq!(read::<Code>(sent).unwrap(), Code { code: "123456".into(), password: None });
        let sent = fields(&[("password", "")]);
        assert_eq!(read::<Code>(sent).unwrap(), Code { code: String::new(), password: Some(String::new()) });
    }

    #[test]
    fn a_missing_required_field_is_a_bad_request() {
        #[derive(Deserialize, Debug)]
        #[allow(dead_code)]
        struct Named {
            name: String,
        }
        assert!(matches!(read::<Named>(fields(&[])), Err(ApiError::BadRequest(_))));
    }
}
