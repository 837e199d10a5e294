//! `Content-Disposition` of a device's configuration file, so that a browser or
//! `curl -OJ` saves it under the device's name.

use axum::http::HeaderValue;
use ferrozone_domain::client_config;

/// The longest stem of the `filename*` name, in characters.
const UNICODE_STEM_MAX: usize = 64;

/// `attachment; filename="<name>.conf"`, the name made safe for wg-quick and for the
/// header ([`client_config::file_name`]: ASCII letters, digits and `_=+.-` only, so no
/// quote, CR, LF or slash). A name with other letters (`Zoë`, `手机`) also gets RFC 6266's
/// `filename*=UTF-8''…` with them kept, percent-encoded, for clients that read it.
pub fn config_file(device_name: &str) -> HeaderValue {
    let mut value = format!("attachment; filename=\"{}\"", client_config::file_name(device_name));
    if !device_name.is_ascii() {
        if let Some(stem) = unicode_stem(device_name) {
            value.push_str("; filename*=UTF-8''");
            value.push_str(&ferrozone_domain::percent::encode(&format!("{stem}.conf"), b"+"));
        }
    }
    // Only ASCII letters, digits and punctuation are left: always a valid header value.
    HeaderValue::from_str(&value).unwrap_or_else(|_| HeaderValue::from_static("attachment"))
}

/// The name with letters and digits of any script kept, every other run of characters
/// (spaces, quotes, slashes, controls) one `-`; `None` when nothing is left or no letter
/// beyond ASCII is (the plain `filename` says it all then).
fn unicode_stem(name: &str) -> Option<String> {
    let stem = client_config::file_stem(name, char::is_alphanumeric, UNICODE_STEM_MAX);
    let useful = !stem.is_ascii() && !stem.chars().all(|c| c == '.');
    useful.then_some(stem)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn header(name: &str) -> String {
        config_file(name).to_str().unwrap().to_owned()
    }

    #[test]
    fn an_ascii_name_is_the_file_name() {
        assert_eq!(header("laptop"), r#"attachment; filename="laptop.conf""#);
        assert_eq!(header("my laptop"), r#"attachment; filename="my-laptop.conf""#);
    }

    #[test]
    fn quotes_line_breaks_and_slashes_never_reach_the_header() {
        for name in ["a\"b", "a\r\nSet-Cookie: x=1", "../../etc/passwd", "a\\b", "x;filename=evil"] {
            let value = header(name);
            let file = value.trim_start_matches("attachment; filename=\"").trim_end_matches('"');
            assert!(!file.contains(['"', '\r', '\n', '/', '\\', ';', ' ']), "{name:?}: {value}");
        }
    }

    #[test]
    fn other_letters_are_kept_in_filename_star() {
        assert_eq!(
            header("Zoë's phone"),
            r#"attachment; filename="Zo-s-phone.conf"; filename*=UTF-8''Zo%C3%AB-s-phone.conf"#
        );
        assert_eq!(
            header("手机"),
            r#"attachment; filename="ferrozone.conf"; filename*=UTF-8''%E6%89%8B%E6%9C%BA.conf"#
        );
        // Symbols alone leave no name worth a second form.
        assert_eq!(header("☃"), r#"attachment; filename="ferrozone.conf""#);
    }
}
