//! BMP: the dimensions from the DIB header, which comes in two layouts: OS/2's 12-byte
//! BITMAPCOREHEADER (16-bit width and height) and every later one (signed 32-bit; a
//! negative height is a top-down image of |height| rows). A width ≤ 0 or a height of 0 is
//! no image. Pixel data that the header places past the end of the file is a truncated
//! file.

use super::Layout;

pub(super) fn read(data: &[u8], complete: bool) -> Layout<'_> {
    let mut out = Layout::default();
    let u16_at = |i: usize| data.get(i..i + 2).map(|b| u16::from_le_bytes([b[0], b[1]]));
    let u32_at = |i: usize| {
        data.get(i..i + 4)
            .map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    };
    let Some(header) = u32_at(14) else {
        out.error = Some("BMP header cut short".into());
        return out;
    };
    let (width, height, bits, compression) = if header == 12 {
        let (Some(w), Some(h), Some(bits)) = (u16_at(18), u16_at(20), u16_at(24)) else {
            out.error = Some("BMP header cut short".into());
            return out;
        };
        (i64::from(w), i64::from(h), bits, 0)
    } else {
        let (Some(w), Some(h), Some(bits)) = (u32_at(18), u32_at(22), u16_at(28)) else {
            out.error = Some("BMP header cut short".into());
            return out;
        };
        // OS/2 2.x headers shorter than 20 bytes end before the compression field.
        let compression = if header >= 20 {
            u32_at(30).unwrap_or(0)
        } else {
            0
        };
        (i64::from(w as i32), i64::from(h as i32), bits, compression)
    };
    if width <= 0 || height == 0 {
        out.error = Some(format!("impossible BMP dimensions {width}×{height}"));
        return out;
    }
    let (width, height) = (width as u64, height.unsigned_abs());
    out.width = Some(width);
    out.height = Some(height);
    // Uncompressed (BI_RGB, BI_BITFIELDS) rows are padded to 4 bytes.
    if complete && matches!(compression, 0 | 3) {
        let offset = u32_at(10).map_or(0, u64::from);
        let row = (width.saturating_mul(u64::from(bits)).saturating_add(31) / 32).saturating_mul(4);
        let needed = offset.saturating_add(row.saturating_mul(height));
        if needed > data.len() as u64 {
            out.error = Some(format!(
                "truncated BMP ({} bytes; its pixel data ends at {needed})",
                data.len()
            ));
        }
    }
    out
}
