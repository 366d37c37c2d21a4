//! The seek map: where on the disk each file lay against when it was read, given order
//! beside seekless's physical order, as one SVG picture.

use std::fmt::Write as _;

use super::{BenchResult, ContenderResult};

/// An SVG seek map of a benchmark run with [`BenchOptions::trace`](super::BenchOptions::trace):
/// time since the read began (x) against the disk offset of the file being read (y), one
/// dot per file (at most 4,000 a series), for given order (red) and seekless's physical
/// order with its window (blue), each in a `<g class="series" data-series="NAME">`. The
/// offset axis spans the offsets seen (MiB, or GiB from 4 GiB up), so a small corpus on a
/// big disk is not a flat line. A contender the run does not have is left out.
///
/// ```
/// use seekless_core::{PlanOptions, Quiet};
/// use seekless_jobs::bench::{BenchOptions, Cold, bench, seek_map_svg};
///
/// let dir = tempfile::tempdir()?;
/// std::fs::write(dir.path().join("a"), vec![1u8; 10_000])?;
/// let mut opts = BenchOptions::default();
/// opts.cold = Cold::Warm;
/// opts.trace = true;
/// let result = bench(&[dir.path().to_path_buf()], &PlanOptions::default(), &opts, &Quiet);
/// let svg = seek_map_svg(&result);
/// assert!(svg.starts_with("<svg ") && svg.ends_with("</svg>\n"));
/// # Ok::<(), std::io::Error>(())
/// ```
pub fn seek_map_svg(r: &BenchResult) -> String {
    const W: f64 = 720.0;
    const H: f64 = 420.0;
    const L: f64 = 70.0; // left margin (y labels)
    const R: f64 = 20.0;
    const T: f64 = 66.0; // top margin (title, legend)
    const B: f64 = 50.0;
    const MAX_POINTS: usize = 4000;
    let series: Vec<(&str, &str, &ContenderResult)> = [
        ("given", "#d62728", "given order"),
        ("physical", "#1f77b4", "seekless (physical, window)"),
    ]
    .into_iter()
    .filter_map(|(name, color, label)| Some((label, color, r.contender(name)?)))
    .collect();
    let t_max = series
        .iter()
        .map(|(_, _, c)| c.read_secs)
        .fold(0.0f64, f64::max)
        .max(1e-3);
    // The offset axis spans the offsets seen, so a small corpus on a big disk is not a
    // flat line.
    let offsets = || {
        series
            .iter()
            .flat_map(|(_, _, c)| c.trace.iter().map(|p| p.1))
    };
    let off_min = offsets().min().unwrap_or(0) as f64;
    let off_max = offsets().max().unwrap_or(0) as f64;
    let off_span = (off_max - off_min).max(1.0);
    let (unit, scale) = if off_max >= (4u64 << 30) as f64 {
        ("GiB", (1u64 << 30) as f64)
    } else {
        ("MiB", (1u64 << 20) as f64)
    };
    let x = |t: f64| L + t / t_max * (W - L - R);
    let y = |off: f64| H - B - (off - off_min) / off_span * (H - T - B);

    let mut s = String::new();
    let _ = writeln!(
        s,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" viewBox="0 0 {W} {H}" font-family="sans-serif" font-size="12">"#
    );
    s += "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n";
    let _ = writeln!(
        s,
        r#"<text x="{}" y="20" text-anchor="middle" font-size="14">Seek map: {} files, {}</text>"#,
        W / 2.0,
        r.files,
        human_bytes(r.bytes)
    );
    // Axes, ticks and labels.
    let _ = writeln!(
        s,
        r##"<path d="M{L} {T}V{}H{}" fill="none" stroke="#333"/>"##,
        H - B,
        W - R
    );
    for i in 0..=5 {
        let f = i as f64 / 5.0;
        let (tx, ty) = (x(f * t_max), y(off_min + f * off_span));
        let _ = writeln!(
            s,
            r##"<path d="M{tx:.1} {}v5M{L} {ty:.1}h-5" stroke="#333"/><text x="{tx:.1}" y="{}" text-anchor="middle">{}</text><text x="{}" y="{:.1}" text-anchor="end">{}</text>"##,
            H - B,
            H - B + 18.0,
            tick(f * t_max, t_max),
            L - 8.0,
            ty + 4.0,
            tick((off_min + f * off_span) / scale, off_span / scale)
        );
    }
    let _ = writeln!(
        s,
        r#"<text x="{}" y="{}" text-anchor="middle">time since the read began (s)</text>"#,
        (L + W - R) / 2.0,
        H - 12.0
    );
    let _ = writeln!(
        s,
        r#"<text transform="translate(16 {}) rotate(-90)" text-anchor="middle">disk offset ({unit})</text>"#,
        (T + H - B) / 2.0
    );
    // The series: one dot per file handed over (thinned to MAX_POINTS).
    for (i, (label, color, c)) in series.iter().enumerate() {
        let step = c.trace.len().div_ceil(MAX_POINTS).max(1);
        let mut d = String::new();
        for &(t, off) in c.trace.iter().step_by(step) {
            let _ = write!(d, "M{:.1} {:.1}h0", x(t), y(off as f64));
        }
        let _ = writeln!(
            s,
            r#"<g class="series" data-series="{}"><path d="{d}" stroke="{color}" stroke-width="3" stroke-linecap="round" opacity="0.7" fill="none"/></g>"#,
            c.name
        );
        let ly = 36.0 + 15.0 * i as f64;
        let _ = writeln!(
            s,
            r#"<circle cx="{}" cy="{ly}" r="4" fill="{color}"/><text x="{}" y="{}">{label}: {:.2} s read</text>"#,
            L + 20.0,
            L + 30.0,
            ly + 4.0,
            c.read_secs
        );
    }
    s += "</svg>\n";
    s
}

/// A tick label with as many decimals as the axis' span needs (five ticks).
fn tick(v: f64, span: f64) -> String {
    let decimals = (-(span / 5.0).log10()).ceil().clamp(0.0, 6.0) as usize;
    format!("{v:.decimals$}")
}

/// Bytes in binary units, as the command line's summaries print them (`15 B`,
/// `1.46 KiB`, `1.43 MiB`: indicatif's `HumanBytes`, without the dependency).
fn human_bytes(n: u64) -> String {
    const PREFIXES: [&str; 8] = ["Ki", "Mi", "Gi", "Ti", "Pi", "Ei", "Zi", "Yi"];
    let mut amount = n as f64;
    let mut prefix = 0;
    while amount >= 1024.0 && prefix < PREFIXES.len() {
        amount /= 1024.0;
        prefix += 1;
    }
    match prefix {
        0 => format!("{amount:.0} B"),
        p => format!("{amount:.2} {}B", PREFIXES[p - 1]),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench::ColdMethod;

    fn contender(name: &'static str, read_secs: f64, trace: Vec<(f64, u64)>) -> ContenderResult {
        ContenderResult {
            name,
            description: "",
            files: trace.len() as u64,
            bytes: 0,
            average_file_size: 0.0,
            errors: 0,
            lookup_secs: 0.0,
            locate_calls_secs: 0.0,
            sort_secs: 0.0,
            read_secs,
            total_secs: read_secs,
            read_bytes_per_sec: 0.0,
            total_bytes_per_sec: 0.0,
            gain_secs: 0.0,
            gain_percent: 0.0,
            ratio: 1.0,
            filesystems: Vec::new(),
            runs_total_secs: Vec::new(),
            trace,
        }
    }

    fn result(contenders: Vec<ContenderResult>) -> BenchResult {
        BenchResult {
            cold: ColdMethod::Warm,
            reps: 1,
            workers: 1,
            files: 3,
            bytes: 1_500_000,
            disks: Vec::new(),
            errors: 0,
            contenders,
            origin: None,
        }
    }

    /// Checks that `svg` is well-formed XML as this module writes it (elements, quoted
    /// attributes, text without markup characters) and returns its elements' names in
    /// document order.
    fn elements(svg: &str) -> Vec<String> {
        let mut names = Vec::new();
        let mut open: Vec<String> = Vec::new();
        let mut rest = svg;
        while let Some(at) = rest.find('<') {
            let text = &rest[..at];
            assert!(!text.contains('>') && !text.contains('&'), "text {text:?}");
            let end = rest[at..].find('>').expect("a tag ends") + at;
            let tag = &rest[at + 1..end];
            rest = &rest[end + 1..];
            if let Some(name) = tag.strip_prefix('/') {
                assert_eq!(open.pop().as_deref(), Some(name), "closing </{name}>");
                continue;
            }
            let empty = tag.ends_with('/');
            let tag = tag.trim_end_matches('/');
            let (name, mut attrs) = tag.split_once(' ').unwrap_or((tag, ""));
            assert!(
                !name.is_empty() && name.chars().all(|c| c.is_ascii_alphanumeric()),
                "element {name:?}"
            );
            let mut seen = Vec::new();
            while !attrs.trim().is_empty() {
                let (key, value) = attrs.trim_start().split_once("=\"").expect("key=\"value\"");
                assert!(
                    !key.is_empty() && !key.contains(char::is_whitespace),
                    "{key:?}"
                );
                assert!(!seen.contains(&key), "{key} twice in <{tag}>");
                seen.push(key);
                let close = value.find('"').expect("a closing quote");
                assert!(!value[..close].contains(['<', '&']), "{tag}");
                attrs = &value[close + 1..];
            }
            names.push(name.to_string());
            if !empty {
                open.push(name.to_string());
            }
        }
        assert!(rest.trim().is_empty(), "after the root: {rest:?}");
        assert!(open.is_empty(), "never closed: {open:?}");
        names
    }

    #[test]
    fn the_seek_map_is_well_formed_svg_with_a_dot_per_file_of_each_series() {
        let given = vec![(0.0, 8 << 20), (0.5, 1 << 20), (1.0, 5 << 20)];
        let physical = vec![(0.0, 1 << 20), (0.1, 5 << 20), (0.2, 8 << 20)];
        let svg = seek_map_svg(&result(vec![
            contender("given", 1.0, given),
            contender("inode", 0.8, vec![(0.0, 0)]),
            contender("physical", 0.25, physical),
        ]));
        let names = elements(&svg);
        assert_eq!(names[0], "svg");
        assert!(svg.starts_with("<svg xmlns=\"http://www.w3.org/2000/svg\" "));
        assert!(svg.ends_with("</svg>\n"));
        assert!(svg.contains(">Seek map: 3 files, 1.43 MiB</text>"), "{svg}");
        // Two series, given and physical (the inode contender is not drawn), each a dot
        // per file and a legend entry with its read time.
        assert_eq!(svg.matches("class=\"series\"").count(), 2);
        for (name, color, legend) in [
            ("given", "#d62728", "given order: 1.00 s read"),
            (
                "physical",
                "#1f77b4",
                "seekless (physical, window): 0.25 s read",
            ),
        ] {
            let at = svg.find(&format!("data-series=\"{name}\"")).unwrap();
            let line = svg[at..].lines().next().unwrap();
            assert_eq!(line.matches("h0").count(), 3, "{line}");
            assert!(line.contains(&format!("stroke=\"{color}\"")), "{line}");
            assert!(svg.contains(&format!(">{legend}</text>")), "{svg}");
        }
        assert!(!svg.contains("data-series=\"inode\""));
        // The offset axis spans the offsets seen, 1 to 8 MiB: the lowest dot sits on the
        // x axis (y = 370), the highest at the top of the plot (y = 66); the time axis
        // spans the longest read, 1 s (x from 70 to 700).
        assert!(svg.contains("M70.0 370.0h0"), "physical's first: {svg}");
        assert!(svg.contains("M70.0 66.0h0"), "given's first: {svg}");
        assert!(
            svg.contains("M700.0 196.3h0"),
            "given's last, at 5 MiB: {svg}"
        );
        assert!(svg.contains("disk offset (MiB)"));
        for label in ["end\">1</text>", "end\">8</text>", "middle\">1.0</text>"] {
            assert!(svg.contains(label), "{label} in {svg}");
        }
    }

    #[test]
    fn a_seek_map_without_a_trace_is_still_a_picture() {
        let svg = seek_map_svg(&result(vec![contender("given", 0.0, Vec::new())]));
        let names = elements(&svg);
        assert_eq!(names.iter().filter(|n| *n == "g").count(), 1);
        assert!(!svg.contains("NaN") && !svg.contains("inf"), "{svg}");
        let none = seek_map_svg(&result(Vec::new()));
        assert!(!elements(&none).contains(&"g".to_string()));
    }

    #[test]
    fn bytes_are_written_as_the_command_line_writes_them() {
        for n in [
            0,
            1,
            15,
            1023,
            1024,
            1025,
            1_500,
            1_048_575,
            1_048_576,
            1_500_000,
            (4u64 << 30) - 1,
            1_500_000_000_000_000,
            u64::MAX,
        ] {
            assert_eq!(human_bytes(n), indicatif::HumanBytes(n).to_string(), "{n}");
        }
    }
}
