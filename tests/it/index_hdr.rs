//! HDR thumbnails (docs/index.md, "HDR pictures"): a PQ or HLG HEIF/AVIF's thumbnail is
//! tone-mapped to SDR, so that it looks like the SDR rendition of the same frame. Measured
//! as the mean absolute difference per channel (8-bit units, by Pillow, over the whole
//! thumbnail) between the stored thumbnail and the SDR rendition's, and against what the
//! decode without tone mapping gives (libheif's own `heif-convert` to 8 bits, as
//! thumbnails were made before): that must be outside the tolerance, or the test would
//! pass without tone mapping.
//!
//! Two sources: pictures made here (an SDR picture drawn by Pillow, encoded by this test's
//! Python as PQ and as HLG per BT.2100 with BT.2408's reference white, 203 cd/m², and
//! written as 10-bit BT.2020 AVIFs by libavif's `avifenc`), and an independent pair:
//! libavif's test images (its Debian source), HDR PQ AVIFs made in Photoshop and their SDR
//! renditions (`.ci/fetch-corpora`).

use std::path::Path;
use std::process::Command;

use crate::common::catalog::corpus;
use crate::common::*;

/// The mean absolute difference per channel (0 to 255) of two images, the second resized
/// to the first's size (box filter), by Pillow.
fn mean_difference(python: &str, a: &Path, b: &Path) -> f64 {
    let script = "import sys\nfrom PIL import Image\n\
        a = Image.open(sys.argv[1]).convert('RGB')\n\
        b = Image.open(sys.argv[2]).convert('RGB').resize(a.size, Image.BOX)\n\
        x, y = a.tobytes(), b.tobytes()\n\
        print(sum(abs(p - q) for p, q in zip(x, y)) / len(x))";
    let o = run(Command::new(python).args(["-c", script]).arg(a).arg(b));
    String::from_utf8(o.stdout).unwrap().trim().parse().unwrap()
}

/// Indexes `dir` with `--thumbs` into `db` and writes each thumbnail to `out/NAME.jpg`;
/// returns each file name's `thumb_source`.
fn thumbnails(db: &Path, dir: &Path, out: &Path) -> std::collections::BTreeMap<String, String> {
    let o = output_within(
        seekless()
            .args(["index", "--thumbs", "--db"])
            .arg(db)
            .arg(dir),
        RUN_LIMIT,
    );
    assert!(o.status.success(), "{}", stderr(&o));
    std::fs::create_dir_all(out).unwrap();
    let o = run(Command::new("sqlite3").arg(db).arg(format!(
        // rtrim(path, path without its slashes) is the path's directory.
        "SELECT substr(i.path, length(rtrim(i.path, replace(i.path, '/', ''))) + 1), \
                t.thumb_source, \
                writefile('{}/' || substr(i.path, length(rtrim(i.path, \
                    replace(i.path, '/', ''))) + 1) || '.jpg', t.jpeg) \
         FROM images i JOIN thumbs t ON t.image = i.id WHERE t.jpeg IS NOT NULL",
        out.display()
    )));
    String::from_utf8(o.stdout)
        .unwrap()
        .lines()
        .map(|l| {
            let mut f = l.split('|');
            (f.next().unwrap().to_string(), f.next().unwrap().to_string())
        })
        .collect()
}

/// What the picture looks like without tone mapping: libheif's decode to 8 bits.
fn untone_mapped(file: &Path, out: &Path) {
    run(Command::new("heif-convert").arg(file).arg(out));
}

/// Draws an SDR picture (`sdr`, sRGB PNG, 320 × 240: a gradient, shapes of every colour,
/// a white block) and writes it as 16-bit PNGs of its PQ and HLG encodings (`pq`, `hlg`):
/// sRGB decoded to linear BT.709, converted to BT.2020 (BT.2087's matrix), SDR white put
/// at 203 cd/m² (BT.2408's reference white); PQ by SMPTE ST 2084's inverse EOTF, HLG by
/// BT.2100's inverse OOTF for a 1000 cd/m² display (system gamma 1.2) and its OETF.
const ENCODE: &str = r#"
import math, random, struct, sys, zlib
from PIL import Image, ImageDraw
sdr, outs, w, h = sys.argv[1], {'pq': sys.argv[2], 'hlg': sys.argv[3]}, 320, 240
rng = random.Random(45)
im = Image.new('RGB', (w, h))
d = ImageDraw.Draw(im)
for x in range(w):
    t = x / (w - 1)
    d.line((x, 0, x, h), fill=(int(30 + 200 * t), int(60 + 120 * (1 - t)), int(90 + 100 * t)))
for _ in range(12):
    x, y, s = rng.randrange(w), rng.randrange(h), rng.randrange(20, 120)
    fill = tuple(rng.randrange(256) for _ in range(3))
    shape = d.ellipse if rng.random() < 0.5 else d.rectangle
    shape((x - s // 2, y - s // 3, x + s // 2, y + s // 3), fill=fill)
d.rectangle((0, 0, w // 5, h // 5), fill=(255, 255, 255))
im.save(sdr)
M = [[0.6274, 0.3293, 0.0433], [0.0691, 0.9195, 0.0114], [0.0164, 0.0880, 0.8956]]
m1, m2 = 2610 / 16384, 2523 / 4096 * 128
c1, c2, c3 = 3424 / 4096, 2413 / 4096 * 32, 2392 / 4096 * 32
a = 0.17883277
b, c = 1 - 4 * a, 0.5 - a * math.log(4 * a)
def linear(v):
    v /= 255
    return v / 12.92 if v <= 0.04045 else ((v + 0.055) / 1.055) ** 2.4
def pq(nits):
    y = (nits / 10000) ** m1
    return ((c1 + c2 * y) / (1 + c3 * y)) ** m2
def hlg(e):
    return math.sqrt(3 * e) if e <= 1 / 12 else a * math.log(12 * e - b) + c
def chunk(kind, data):
    return struct.pack('>I', len(data)) + kind + data + struct.pack('>I', zlib.crc32(kind + data))
px = im.load()
for transfer, path in outs.items():
    rows = bytearray()
    for y in range(h):
        rows.append(0)
        for x in range(w):
            l = [linear(v) for v in px[x, y]]
            nits = [203 * sum(M[i][k] * l[k] for k in range(3)) for i in range(3)]
            if transfer == 'pq':
                e = [pq(n) for n in nits]
            else:
                ys = ((0.2627 * nits[0] + 0.6780 * nits[1] + 0.0593 * nits[2]) / 1000) ** (1 / 1.2)
                e = [hlg(n / (1000 * ys ** 0.2)) if ys > 0 else 0 for n in nits]
            for v in e:
                rows += struct.pack('>H', round(min(max(v, 0), 1) * 65535))
    with open(path, 'wb') as f:
        f.write(b'\x89PNG\r\n\x1a\n' + chunk(b'IHDR', struct.pack('>IIBBBBB', w, h, 16, 2, 0, 0, 0))
                + chunk(b'IDAT', zlib.compress(bytes(rows))) + chunk(b'IEND', b''))
"#;

/// Tolerance for pictures encoded from their SDR rendition by the standards' formulas:
/// what remains is the encoders' loss and, for HLG, the highlights the EETF rolls off
/// (SDR white, 203 cd/m² on HLG's 1000 cd/m² display, comes out a light grey).
const ENCODED_TOLERANCE: f64 = 6.0;

#[test]
fn pq_and_hlg_avif_thumbnails_look_like_the_sdr_picture_they_encode() {
    let test = "pq_and_hlg_avif_thumbnails_look_like_the_sdr_picture_they_encode";
    if !require_tools(test, &["sqlite3", "avifenc", "heif-convert"]) {
        return;
    }
    let Some(python) = python_with(test, &["PIL"]) else {
        return;
    };
    let dir = scratch!();
    let (photos, work) = (dir.path().join("photos"), dir.path().join("work"));
    std::fs::create_dir_all(&photos).unwrap();
    std::fs::create_dir_all(&work).unwrap();
    let (pq16, hlg16) = (work.join("pq16.png"), work.join("hlg16.png"));
    run(Command::new(python)
        .args(["-c", ENCODE])
        .arg(photos.join("sdr.png"))
        .args([&pq16, &hlg16]));
    // 10 bits, BT.2020 primaries and matrix, full range; PQ is transfer 16, HLG 18.
    for (png, transfer, avif) in [(&pq16, "16", "pq.avif"), (&hlg16, "18", "hlg.avif")] {
        run(Command::new("avifenc")
            .args(["-d", "10", "-r", "full", "--min", "10", "--max", "20"])
            .args(["--cicp", &format!("9/{transfer}/9")])
            .arg(png)
            .arg(photos.join(avif)));
    }
    let thumbs = work.join("thumbs");
    let sources = thumbnails(&work.join("catalog.db"), &photos, &thumbs);
    assert_eq!(sources["sdr.png"], "full");
    assert_eq!(sources["pq.avif"], "full+pq");
    assert_eq!(sources["hlg.avif"], "full+hlg");
    let sdr = thumbs.join("sdr.png.jpg");
    for name in ["pq.avif", "hlg.avif"] {
        let mapped = mean_difference(python, &thumbs.join(format!("{name}.jpg")), &sdr);
        let plain = work.join(format!("{name}.untone-mapped.jpg"));
        untone_mapped(&photos.join(name), &plain);
        let unmapped = mean_difference(python, &sdr, &plain);
        eprintln!(
            "{name}: {mapped:.2} tone-mapped, {unmapped:.2} without (tolerance {ENCODED_TOLERANCE})"
        );
        assert!(
            mapped <= ENCODED_TOLERANCE,
            "{name}: {mapped:.2} from the SDR picture"
        );
        assert!(
            unmapped > ENCODED_TOLERANCE,
            "{name}: without tone mapping only {unmapped:.2} from the SDR picture: the test \
             would not see tone mapping removed"
        );
    }
}

/// Tolerance for Photoshop's HDR pictures against their SDR renditions: each is a grade
/// of its own (the HDR one's highlights brighter, Adobe's SDR curve not BT.2390's), so
/// the difference is the two operators', not only the encoders' loss.
const PHOTOSHOP_TOLERANCE: f64 = 22.0;

#[test]
fn photoshops_pq_avifs_thumbnails_look_like_their_sdr_renditions() {
    let test = "photoshops_pq_avifs_thumbnails_look_like_their_sdr_renditions";
    let Some(data) = corpus(test, "libavif-1.4.2", "libavif-1.4.2/tests/data") else {
        return;
    };
    if !require_tools(test, &["sqlite3", "heif-convert"]) {
        return;
    }
    let Some(python) = python_with(test, &["PIL"]) else {
        return;
    };
    let dir = scratch!();
    let (photos, work) = (dir.path().join("photos"), dir.path().join("work"));
    std::fs::create_dir_all(&photos).unwrap();
    std::fs::create_dir_all(&work).unwrap();
    // PQ in BT.2020 (transfer 16, primaries 9), and the SDR rendition of the same frame:
    // the base image Adobe Camera Raw wrote beside its gain map (seine), the SDR export of
    // the same document (colors); README.md of libavif's tests/data says how each was made.
    let pairs = [
        ("seine_hdr_rec2020.avif", "seine_sdr_gainmap_srgb.jpg"),
        ("colors_hdr_rec2020.avif", "colors_sdr_srgb.avif"),
        ("colors_hdr_p3.avif", "colors_sdr_srgb.avif"),
    ];
    for (hdr, sdr) in pairs {
        for name in [hdr, sdr] {
            std::fs::copy(data.join(name), photos.join(name)).unwrap();
        }
    }
    let thumbs = work.join("thumbs");
    let sources = thumbnails(&work.join("catalog.db"), &photos, &thumbs);
    assert_eq!(
        sources["colors_sdr_srgb.avif"], "full",
        "an SDR AVIF is not tone-mapped"
    );
    for (hdr, sdr) in pairs {
        assert_eq!(sources[hdr], "full+pq");
        let reference = thumbs.join(format!("{sdr}.jpg"));
        let mapped = mean_difference(python, &thumbs.join(format!("{hdr}.jpg")), &reference);
        let plain = work.join(format!("{hdr}.untone-mapped.jpg"));
        untone_mapped(&photos.join(hdr), &plain);
        let unmapped = mean_difference(python, &reference, &plain);
        eprintln!(
            "{hdr}: {mapped:.2} tone-mapped, {unmapped:.2} without (tolerance {PHOTOSHOP_TOLERANCE})"
        );
        assert!(
            mapped <= PHOTOSHOP_TOLERANCE,
            "{hdr}: {mapped:.2} from {sdr}"
        );
        assert!(
            unmapped > PHOTOSHOP_TOLERANCE,
            "{hdr}: without tone mapping only {unmapped:.2} from {sdr}"
        );
    }
}
