//! The web pages' static files (`assets/`: the stylesheet, the logo), built into the binary
//! and served at `/assets/<stem>.<hash>.<ext>`. The hash is the first 10 hex digits of the
//! file's SHA-256, computed once on first use: a new build with a changed file gets a new
//! URL, so the files can be cached for a year as immutable; any other name is a 404.

use std::sync::LazyLock;

use axum::extract::Path;
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;
use sha2::{Digest, Sha256};

use ferrozone_http::AppState;

/// A file under `assets/`: its name, its `Content-Type` and its bytes.
struct Source {
    name: &'static str,
    content_type: &'static str,
    bytes: &'static [u8],
}

const SOURCES: &[Source] = &[
    Source { name: "app.css", content_type: "text/css; charset=utf-8", bytes: include_bytes!("../assets/app.css") },
    Source { name: "logo.svg", content_type: "image/svg+xml", bytes: include_bytes!("../assets/logo.svg") },
    Source {
        name: "add-device.js",
        content_type: "text/javascript; charset=utf-8",
        bytes: include_bytes!("../assets/add-device.js"),
    },
    Source {
        name: "devices.js",
        content_type: "text/javascript; charset=utf-8",
        bytes: include_bytes!("../assets/devices.js"),
    },
    Source {
        name: "account.js",
        content_type: "text/javascript; charset=utf-8",
        bytes: include_bytes!("../assets/account.js"),
    },
];

/// A source with the path it is served at.
struct Asset {
    source: &'static Source,
    path: String,
}

static ASSETS: LazyLock<Vec<Asset>> =
    LazyLock::new(|| SOURCES.iter().map(|source| Asset { source, path: hashed_path(source) }).collect());

/// `/assets/<stem>.<first 10 hex digits of the SHA-256>.<ext>`.
fn hashed_path(source: &Source) -> String {
    let digest = hex::encode(Sha256::digest(source.bytes));
    let (stem, ext) = source.name.rsplit_once('.').unwrap_or((source.name, ""));
    format!("/assets/{stem}.{}.{ext}", &digest[..10])
}

/// The URL path of the asset named `name` (as in `assets/`, e.g. `app.css`), for pages.
/// Panics on a name that is not an asset: templates name them as constants, and the tests
/// render every page.
pub fn url(name: &str) -> &'static str {
    let asset = ASSETS.iter().find(|a| a.source.name == name);
    &asset.unwrap_or_else(|| panic!("no asset {name:?}")).path
}

pub fn routes() -> Router<AppState> {
    Router::new().route("/assets/{file}", get(serve))
}

/// The asset at this hashed name, or 404 (an unknown file, or an old hash).
async fn serve(Path(file): Path<String>) -> Response {
    let Some(asset) = ASSETS.iter().find(|a| a.path.strip_prefix("/assets/") == Some(file.as_str())) else {
        return ferrozone_http::error::ApiError::NotFound.into_response();
    };
    let mut response = (StatusCode::OK, asset.source.bytes).into_response();
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static(asset.source.content_type));
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("public, max-age=31536000, immutable"));
    headers.insert(header::X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_carry_the_content_hash() {
        let css = url("app.css");
        let digest = hex::encode(Sha256::digest(include_bytes!("../assets/app.css")));
        assert_eq!(css, format!("/assets/app.{}.css", &digest[..10]));
        assert!(url("logo.svg").starts_with("/assets/logo.") && url("logo.svg").ends_with(".svg"));
    }
}
