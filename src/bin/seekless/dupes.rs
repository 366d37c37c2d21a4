//! `seekless dupes`: duplicate groups from an index catalog (see docs/usage.md, "dupes").

use std::io::{BufWriter, Write};
use std::path::PathBuf;

use anyhow::Result;
use seekless::jobs::dupes::{
    Catalog, DEFAULT_SIMILAR, Dupes, DupesOptions, GroupKind, MAX_SIMILAR, html,
};

use crate::exit::Code;
use crate::inputs::Refused;

#[derive(clap::Args, Debug)]
pub struct Args {
    /// The catalog made by `seekless index` (read only, never written).
    #[arg(long, value_name = "FILE", required = true)]
    pub db: PathBuf,

    /// Near-duplicates: perceptual hashes (index --thumbs) within N bits, checked further
    /// (aspect ratio, thumbnails). 0: byte-identical files only.
    #[arg(long, value_name = "N", default_value_t = DEFAULT_SIMILAR,
          value_parser = clap::value_parser!(u32).range(0..=MAX_SIMILAR as i64))]
    pub similar: u32,

    /// Count frames of a burst (one camera, taken within 2 s) as duplicates; without it they
    /// are listed as bursts, after the duplicates, with no keeper.
    #[arg(long)]
    pub bursts_are_dupes: bool,

    /// Print the groups as one JSON document.
    #[arg(long, conflicts_with = "null")]
    pub json: bool,

    /// Print only the files one could delete (every file of a duplicate group but its
    /// keeper), each followed by a NUL byte, for `xargs -0`. Nothing is deleted.
    #[arg(short = '0', long = "null")]
    pub null: bool,

    /// Also write a contact sheet: an HTML page to review the groups and save decisions
    /// (for --apply), its thumbnails in FILE.thumbs/ beside it.
    #[arg(long, value_name = "FILE")]
    pub html: Option<PathBuf>,

    /// Print on stderr what was looked at and found.
    #[arg(long)]
    pub summary: bool,
}

pub fn run(args: Args) -> Result<Code> {
    let opts = {
        let mut o = DupesOptions::default();
        o.similar = args.similar;
        o.bursts_are_dupes = args.bursts_are_dupes;
        o
    };
    let refusal = |e: seekless::jobs::dupes::DupesError| -> anyhow::Error {
        if e.is_refusal() {
            Refused(e.to_string()).into()
        } else {
            e.into()
        }
    };
    let catalog = Catalog::open(&args.db).map_err(refusal)?;
    let dupes = catalog.find(&opts)?;
    if args.similar > 0 && dupes.with_phash == 0 && dupes.images > 0 {
        eprintln!(
            "seekless: dupes: no image in {} has a perceptual hash (seekless index --thumbs makes them): exact duplicates only",
            args.db.display()
        );
    }
    if let Some(path) = &args.html {
        let title = format!("Duplicates in {}", args.db.display());
        html::write_contact_sheet(&catalog, &dupes, &title, path)?;
    }
    let stdout = std::io::stdout();
    let mut out = BufWriter::new(stdout.lock());
    if args.json {
        let doc = serde_json::json!({
            "db": args.db.to_string_lossy(),
            "similar": args.similar,
            "bursts_are_dupes": args.bursts_are_dupes,
            "images": dupes.images,
            "ignored": dupes.ignored,
            "with_phash": dupes.with_phash,
            "saving": dupes.saving(),
            "groups": dupes.groups,
        });
        serde_json::to_writer_pretty(&mut out, &doc)?;
        out.write_all(b"\n")?;
    } else if args.null {
        for m in dupes.removable() {
            out.write_all(&m.path_bytes)?;
            out.write_all(b"\0")?;
        }
    } else {
        text(&mut out, &dupes)?;
    }
    out.flush()?;
    if args.summary {
        let groups = dupes.groups.iter().filter(|g| g.kind.is_duplicate());
        eprintln!(
            "seekless: dupes: {} images ({} with a perceptual hash, {} without a content hash ignored); \
             {} groups, {} files, {} freed by keeping one of each; {} bursts; {} pairs kept together; \
             {} pairs within {} bits, {} refused by aspect ratio, {} by thumbnail",
            dupes.images,
            dupes.with_phash,
            dupes.ignored,
            groups.clone().count(),
            groups.map(|g| g.members.len()).sum::<usize>(),
            indicatif::HumanBytes(dupes.saving()),
            dupes
                .groups
                .iter()
                .filter(|g| g.kind == GroupKind::Burst)
                .count(),
            dupes
                .groups
                .iter()
                .filter(|g| g.kind == GroupKind::Pair)
                .count(),
            dupes.candidates,
            args.similar,
            dupes.rejected_aspect,
            dupes.rejected_thumbnail,
        );
    }
    Ok(Code::Ok)
}

/// Groups separated by a blank line: a heading, then one line per file, the keeper marked
/// `*`: dimensions (orientation applied), size, date taken, pHash distance to the group's
/// first file (similar groups and bursts; `copy`: byte-identical to the keeper), path (its
/// bytes as they are).
fn text(out: &mut impl Write, dupes: &Dupes) -> std::io::Result<()> {
    for (i, g) in dupes.groups.iter().enumerate() {
        if i > 0 {
            out.write_all(b"\n")?;
        }
        let n = g.members.len();
        match g.kind {
            GroupKind::Exact => writeln!(
                out,
                "exact: {n} identical files of {}, {} freed by keeping one ({} bytes)",
                indicatif::HumanBytes(g.members[0].size),
                indicatif::HumanBytes(g.saving),
                g.saving
            )?,
            GroupKind::Similar => writeln!(
                out,
                "similar: {n} files, {} freed by keeping one ({} bytes)",
                indicatif::HumanBytes(g.saving),
                g.saving
            )?,
            GroupKind::Burst => writeln!(
                out,
                "burst: {n} shots of one camera within 2 s (not duplicates)"
            )?,
            GroupKind::Pair => writeln!(
                out,
                "pair: {n} files of one shot, kept together ({}; not duplicates)",
                match g.link.as_deref() {
                    Some("live-photo") => "a Live Photo's still and video",
                    _ => "a raw file and the camera's JPEG",
                }
            )?,
        }
        for m in &g.members {
            let dims = match (m.width, m.height) {
                (Some(w), Some(h)) if matches!(m.orientation, Some(5..=8)) => format!("{h}x{w}"),
                (Some(w), Some(h)) => format!("{w}x{h}"),
                _ => "-".into(),
            };
            let taken = m
                .taken
                .as_deref()
                .map_or("-".to_string(), |t| t.replacen('T', " ", 1));
            let copy = g.kind == GroupKind::Similar && !m.keeper && m.blake3 == g.members[0].blake3;
            let distance = match (g.kind, m.distance) {
                (GroupKind::Exact, _) => String::new(),
                _ if copy => "copy ".into(),
                (_, Some(d)) => format!("d={d:<2} "),
                (_, None) => "d=-  ".into(),
            };
            write!(
                out,
                "{} {dims:>11} {:>10}  {taken:<19}  {distance}",
                if m.keeper { '*' } else { ' ' },
                indicatif::HumanBytes(m.size).to_string(),
            )?;
            out.write_all(&m.path_bytes)?;
            out.write_all(b"\n")?;
        }
    }
    Ok(())
}
