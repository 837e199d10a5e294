//! QR codes of device configurations, for WireGuard's mobile apps to scan.

use qrcode::render::svg;
use qrcode::types::QrError;
use qrcode::{Color, EcLevel, QrCode};

/// Pixels per module in both renderings.
const MODULE_PX: usize = 8;
/// The blank border the QR standard asks for, in modules.
const QUIET_ZONE: usize = 4;

/// Why a text cannot be shown as a QR code.
#[derive(Debug, thiserror::Error)]
pub enum QrFailure {
    /// More than a QR code can hold (2953 bytes at the lowest error correction).
    #[error("the configuration is too long for a QR code")]
    TooLong,
    #[error("encoding the QR code failed: {0}")]
    Encode(String),
}

/// Error correction level L, as `qrencode` (which wg-quick's documentation uses) picks by
/// default: the most room for data, and the smallest code for a configuration's size.
fn encode(text: &str) -> Result<QrCode, QrFailure> {
    QrCode::with_error_correction_level(text.as_bytes(), EcLevel::L).map_err(|e| match e {
        QrError::DataTooLong => QrFailure::TooLong,
        other => QrFailure::Encode(other.to_string()),
    })
}

/// `text` as an SVG document.
pub fn svg(text: &str) -> Result<String, QrFailure> {
    let module = MODULE_PX as u32;
    Ok(encode(text)?.render::<svg::Color<'_>>().module_dimensions(module, module).quiet_zone(true).build())
}

/// `text` as an 8-bit greyscale PNG: black modules on white, with the quiet zone.
pub fn png(text: &str) -> Result<Vec<u8>, QrFailure> {
    let code = encode(text)?;
    let modules = code.width();
    let side = (modules + 2 * QUIET_ZONE) * MODULE_PX;
    let mut pixels = vec![u8::MAX; side * side];
    for (i, color) in code.to_colors().into_iter().enumerate() {
        if color == Color::Dark {
            let (x, y) = ((i % modules + QUIET_ZONE) * MODULE_PX, (i / modules + QUIET_ZONE) * MODULE_PX);
            for row in y..y + MODULE_PX {
                pixels[row * side + x..row * side + x + MODULE_PX].fill(0);
            }
        }
    }
    encode_png(&pixels, side).map_err(|e| QrFailure::Encode(e.to_string()))
}

fn encode_png(pixels: &[u8], side: usize) -> Result<Vec<u8>, png::EncodingError> {
    // At most (177 + 8) * 8 = 1480 pixels a side (version 40): always fits a u32.
    let side = u32::try_from(side).unwrap_or(u32::MAX);
    let mut out = Vec::new();
    let mut encoder = png::Encoder::new(&mut out, side, side);
    encoder.set_color(png::ColorType::Grayscale);
    encoder.set_depth(png::BitDepth::Eight);
    encoder.set_compression(png::Compression::Fast);
    let mut writer = encoder.write_header()?;
    writer.write_image_data(pixels)?;
    writer.finish()?;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn png_has_the_signature_and_the_quiet_zone() {
        let bytes = png("[Interface]\n").unwrap();
        assert!(bytes.starts_with(b"\x89PNG\r\n\x1a\n"));
        let decoder = png::Decoder::new(std::io::Cursor::new(bytes));
        let info = decoder.read_info().unwrap().info().clone();
        assert_eq!(info.width, info.height);
        // Version 1 is 21 modules wide.
        assert_eq!(info.width as usize, (21 + 2 * QUIET_ZONE) * MODULE_PX);
    }

    #[test]
    fn too_long_a_text_is_a_clear_failure() {
        assert!(matches!(png(&"x".repeat(4000)), Err(QrFailure::TooLong)));
        assert!(matches!(svg(&"x".repeat(4000)), Err(QrFailure::TooLong)));
    }
}
