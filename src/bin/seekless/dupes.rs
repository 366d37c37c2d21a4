//! `seekless dupes`: duplicate groups from an index catalog, the user's decisions about
//! them, and acting on them (see docs/usage.md, "dupes").

use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use anyhow::Result;
use seekless::jobs::dupes::act::{self, Act, Outcome};
use seekless::jobs::dupes::{
    Catalog, DEFAULT_SIMILAR, Dupes, DupesError, DupesOptions, GroupKind, Keeping, MAX_SIMILAR,
    decisions::{self, Decision, DecisionKind},
    html,
};

use crate::exit::Code;
use crate::inputs::{Refused, UsageError};
use crate::output::escaped;

#[derive(clap::Args, Debug)]
pub struct Args {
    /// The catalog made by `seekless index`. Read only, unless decisions are recorded
    /// (`--apply`, `--undecide`) or files are acted on (`--act`).
    #[arg(long, value_name = "FILE", required_unless_present = "undo")]
    pub db: Option<PathBuf>,

    /// Near-duplicates: perceptual hashes (index --thumbs) within N bits, checked further
    /// (aspect ratio, thumbnails). 0: byte-identical files only.
    #[arg(long, value_name = "N", default_value_t = DEFAULT_SIMILAR,
          value_parser = clap::value_parser!(u32).range(0..=MAX_SIMILAR as i64))]
    pub similar: u32,

    /// Count frames of a burst (one camera, taken within 2 s) as duplicates; without it they
    /// are listed as bursts, after the duplicates, with no keeper.
    #[arg(long)]
    pub bursts_are_dupes: bool,

    /// The keeper rules, in order, separated by commas: preferred (under a --prefer
    /// folder), resolution, largest, oldest, newest, shortest-path. Files of a pair (raw
    /// and JPEG, Live Photo) and under --protect are kept before any rule.
    #[arg(
        long,
        value_name = "RULES",
        default_value = "preferred,resolution,oldest,shortest-path"
    )]
    pub keep: String,

    /// Keep files under DIR before others (repeatable; an earlier DIR first).
    #[arg(long, value_name = "DIR")]
    pub prefer: Vec<PathBuf>,

    /// Never offer a file under DIR for removal (repeatable).
    #[arg(long, value_name = "DIR")]
    pub protect: Vec<PathBuf>,

    /// Record the decisions of FILE (saved from the contact sheet) in the catalog, then go
    /// on as asked.
    #[arg(long, value_name = "FILE")]
    pub apply: Option<PathBuf>,

    /// List the decisions recorded in the catalog, and stop.
    #[arg(long, conflicts_with_all = ["act", "undo", "html", "null"])]
    pub decisions: bool,

    /// Remove the recorded decision ID (repeatable; `--decisions` lists them), and stop.
    #[arg(long, value_name = "ID", conflicts_with_all = ["act", "undo", "decisions"])]
    pub undecide: Vec<i64>,

    /// Act on every file offered for removal: move (under --to DIR), trash (the
    /// freedesktop.org trash of its filesystem), hardlink (to its keeper), reflink (share
    /// its keeper's extents). Each file and its keeper are read again first and must be
    /// as indexed; every act is journalled (--undo reverses moves and trashes).
    #[arg(long, value_name = "ACT", value_parser = ["move", "trash", "hardlink", "reflink"],
          conflicts_with_all = ["null", "undo", "json"])]
    pub act: Option<String>,

    /// `--act move`: the folder to move files under, at their absolute paths
    /// (`/p/a.jpg` goes to `DIR/p/a.jpg`). On the files' own filesystem.
    #[arg(long, value_name = "DIR")]
    pub to: Option<PathBuf>,

    /// `--act move` or `trash`: also act on files that are similar to their keeper but not
    /// byte-identical.
    #[arg(long)]
    pub include_similar: bool,

    /// `--act hardlink`: also link a duplicate whose owner, group, permissions, ACLs or
    /// extended attributes differ from its keeper's; the keeper's win (the duplicate's
    /// are lost). Without it such a file is left, with a message.
    #[arg(long)]
    pub link_any_metadata: bool,

    /// With --act: print what would be done, and do nothing.
    #[arg(long, requires = "act")]
    pub dry_run: bool,

    /// With --act: the journal to write (a new file); by default beside the catalog,
    /// named after it and the time.
    #[arg(long, value_name = "FILE", requires = "act")]
    pub journal: Option<PathBuf>,

    /// Put back every file the journal FILE moved or put in the trash, and stop.
    #[arg(long, value_name = "JOURNAL")]
    pub undo: Option<PathBuf>,

    /// Print the groups (or the decisions) as one JSON document.
    #[arg(long, conflicts_with = "null")]
    pub json: bool,

    /// Print only the files one could delete (every file of a duplicate group but its
    /// keeper and protected files), each followed by a NUL byte. Nothing is deleted.
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

fn refusal(e: DupesError) -> anyhow::Error {
    if e.is_refusal() {
        Refused(e.to_string()).into()
    } else {
        e.into()
    }
}

/// A folder given on the command line, absolute and canonical (the catalog's paths are):
/// one that does not exist is a usage error, not a rule that silently matches nothing.
fn folder(option: &str, dir: &Path) -> Result<PathBuf> {
    std::fs::canonicalize(dir).map_err(|e| {
        UsageError(format!(
            "{option} {}: {}",
            dir.display(),
            seekless_sys::describe_io(&e)
        ))
        .into()
    })
}

/// `--to DIR` as an absolute path without links: the nearest folder of it that exists,
/// which must be a folder, made canonical, and the rest of DIR below it.
fn move_folder(dir: &Path) -> Result<PathBuf> {
    let usage = |e: std::io::Error| -> anyhow::Error {
        UsageError(format!(
            "--to {}: {}",
            dir.display(),
            seekless_sys::describe_io(&e)
        ))
        .into()
    };
    let abs = std::path::absolute(dir).map_err(usage)?;
    let mut rest = Vec::new();
    let mut at = abs.as_path();
    loop {
        match std::fs::metadata(at) {
            Ok(m) if m.is_dir() => break,
            Ok(_) => {
                return Err(usage(std::io::Error::from(
                    std::io::ErrorKind::NotADirectory,
                )));
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                rest.push(at.file_name().ok_or_else(|| usage(e))?.to_owned());
                at = at.parent().expect("absolute, not the root");
            }
            Err(e) => return Err(usage(e)),
        }
    }
    let mut out = std::fs::canonicalize(at).map_err(usage)?;
    out.extend(rest.iter().rev());
    Ok(out)
}

pub fn run(args: Args) -> Result<Code> {
    if let Some(journal) = &args.undo {
        return undo(journal);
    }
    let Some(db) = args.db.clone() else {
        return Err(UsageError("--db FILE is required".into()).into());
    };
    let mut keeping = Keeping::default();
    keeping.rules =
        Keeping::parse_rules(&args.keep).map_err(|e| UsageError(format!("--keep: {e}")))?;
    keeping.prefer = args
        .prefer
        .iter()
        .map(|d| folder("--prefer", d))
        .collect::<Result<_>>()?;
    keeping.protect = args
        .protect
        .iter()
        .map(|d| folder("--protect", d))
        .collect::<Result<_>>()?;
    let act = match args.act.as_deref() {
        None => None,
        Some("move") => {
            let Some(to) = &args.to else {
                return Err(UsageError("--act move needs --to DIR".into()).into());
            };
            // Nothing is made here, not even the folder: each move makes what it needs,
            // on its file's filesystem, once the file has been checked.
            Some(Act::Move(move_folder(to)?))
        }
        Some("trash") => Some(Act::Trash),
        Some("hardlink") => Some(Act::HardLink {
            metadata_may_differ: args.link_any_metadata,
        }),
        Some(_) => Some(Act::Reflink),
    };
    if args.link_any_metadata && !matches!(act, Some(Act::HardLink { .. })) {
        return Err(UsageError("--link-any-metadata goes with --act hardlink".into()).into());
    }
    if args.to.is_some() && !matches!(act, Some(Act::Move(_))) {
        return Err(UsageError("--to goes with --act move".into()).into());
    }
    if args.include_similar && !act.as_ref().is_some_and(Act::keeps_the_bytes) {
        return Err(UsageError(
            "--include-similar goes with --act move or --act trash only (files that are not identical to their keeper are never replaced)".into(),
        )
        .into());
    }

    // The catalog is looked at (and refused if it is not one) before anything is written.
    let catalog = Catalog::open(&db).map_err(refusal)?;
    if let Some(file) = &args.apply {
        let mut list = decisions::read_file(file).map_err(Refused)?;
        drop(catalog);
        decisions::record(&db, &mut list).map_err(refusal)?;
        eprintln!(
            "seekless: dupes: {} decisions recorded from {}",
            list.len(),
            escaped(&seekless_sys::path_to_bytes(file))
        );
        let catalog = Catalog::open(&db).map_err(refusal)?;
        return run_with(args, db, keeping, act, catalog);
    }
    if !args.undecide.is_empty() {
        drop(catalog);
        let gone = decisions::undecide(&db, &args.undecide).map_err(refusal)?;
        let missing: Vec<String> = args
            .undecide
            .iter()
            .filter(|id| !gone.contains(id))
            .map(|id| id.to_string())
            .collect();
        eprintln!("seekless: dupes: {} decisions removed", gone.len());
        if !missing.is_empty() {
            eprintln!("seekless: dupes: no decision {}", missing.join(", "));
            return Ok(Code::Failed);
        }
        return Ok(Code::Ok);
    }
    run_with(args, db, keeping, act, catalog)
}

fn run_with(
    args: Args,
    db: PathBuf,
    keeping: Keeping,
    act: Option<Act>,
    catalog: Catalog,
) -> Result<Code> {
    let mut out = BufWriter::new(crate::output::stdout());
    if args.decisions {
        let list = catalog.decisions()?;
        if args.json {
            serde_json::to_writer_pretty(&mut out, &serde_json::json!({ "decisions": list }))?;
            out.write_all(b"\n")?;
        } else {
            print_decisions(&mut out, &list)?;
        }
        out.flush()?;
        return Ok(Code::Ok);
    }
    let opts = {
        let mut o = DupesOptions::default();
        o.similar = args.similar;
        o.bursts_are_dupes = args.bursts_are_dupes;
        o.keeping = keeping;
        o
    };
    let dupes = catalog.find(&opts)?;
    if args.similar > 0 && dupes.with_phash == 0 && dupes.images > 0 {
        eprintln!(
            "seekless: dupes: no image in {} has a perceptual hash (seekless index --thumbs makes them): exact duplicates only",
            escaped(&seekless_sys::path_to_bytes(&db))
        );
    }
    if let Some(path) = &args.html {
        let title = format!("Duplicates in {}", db.display());
        let sheet = html::write_contact_sheet(&catalog, &dupes, &title, path)?;
        if sheet.kept_aside > 0 {
            eprintln!(
                "seekless: dupes: {}: files there that are not the thumbnail this sheet would write, left as they are: {} (their contents are shown without one; remove the folder to have them all written again)",
                escaped(&seekless_sys::path_to_bytes(&html::thumbs_dir(path))),
                sheet.kept_aside
            );
        }
    }
    if let Some(act) = act {
        drop(catalog);
        return act_on(&args, &db, &dupes, &act, &mut out);
    }
    if args.json {
        let doc = serde_json::json!({
            "db": db.to_string_lossy(),
            "similar": args.similar,
            "bursts_are_dupes": args.bursts_are_dupes,
            "images": dupes.images,
            "ignored": dupes.ignored,
            "with_phash": dupes.with_phash,
            "decided": dupes.decided,
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
        summary(&args, &dupes);
    }
    Ok(Code::Ok)
}

fn summary(args: &Args, dupes: &Dupes) {
    let groups = dupes.groups.iter().filter(|g| g.kind.is_duplicate());
    let count = |kind| dupes.groups.iter().filter(|g| g.kind == kind).count();
    eprintln!(
        "seekless: dupes: {} images ({} with a perceptual hash, {} without a content hash ignored); \
         {} groups, {} files, {} freed by keeping one of each; {} groups kept by your decisions; \
         {} bursts; {} pairs kept together; \
         {} pairs within {} bits, {} refused by aspect ratio, {} by thumbnail",
        dupes.images,
        dupes.with_phash,
        dupes.ignored,
        groups.clone().count(),
        groups.map(|g| g.members.len()).sum::<usize>(),
        indicatif::HumanBytes(dupes.saving()),
        dupes.decided,
        count(GroupKind::Burst),
        count(GroupKind::Pair),
        dupes.candidates,
        args.similar,
        dupes.rejected_aspect,
        dupes.rejected_thumbnail,
    );
}

/// `--act`: the plan (`--dry-run`: only the plan), then the acts, one line each on stdout,
/// what was skipped on stderr.
fn act_on(args: &Args, db: &Path, dupes: &Dupes, act: &Act, out: &mut impl Write) -> Result<Code> {
    let planned = act::plan(dupes, args.include_similar);
    let name = |p: &Path| escaped(&seekless_sys::path_to_bytes(p));
    let line = |p: &act::Planned<'_>| -> String {
        let file = escaped(&p.file.path_bytes);
        let keeper = escaped(&p.keeper.path_bytes);
        match act {
            Act::Move(_) => {
                let to = act
                    .destination(&seekless_sys::path_from_bytes(&p.file.path_bytes))
                    .unwrap_or_default();
                format!("move {file} -> {} (keeping {keeper})", name(&to))
            }
            Act::Trash => format!("trash {file} (keeping {keeper})"),
            Act::HardLink { .. } => format!("hardlink {file} -> {keeper}"),
            Act::Reflink => format!("reflink {file} <- {keeper}"),
        }
    };
    if args.dry_run {
        let bytes: u64 = planned.iter().map(|p| p.file.size).sum();
        for p in &planned {
            writeln!(out, "{}", line(p))?;
        }
        out.flush()?;
        eprintln!(
            "seekless: dupes: dry run: {} files ({}) would be acted on; nothing done",
            planned.len(),
            indicatif::HumanBytes(bytes)
        );
        return Ok(Code::Ok);
    }
    let journal = args
        .journal
        .clone()
        .unwrap_or_else(|| act::default_journal(db));
    let mut failed = false;
    let report = act::run(db, &planned, act, &journal, |p, outcome| {
        let r = match outcome {
            Outcome::Done(_) => writeln!(out, "{}", line(p)),
            Outcome::Skipped(why) => {
                eprintln!(
                    "seekless: dupes: {}: skipped: {}",
                    escaped(&p.file.path_bytes),
                    escaped(why.as_bytes())
                );
                Ok(())
            }
        };
        failed |= r.is_err();
    })
    .map_err(refusal)?;
    out.flush()?;
    cleaned(&report.cleaned);
    eprintln!(
        "seekless: dupes: {} files acted on ({} freed), {} skipped; {} catalog rows forgotten; journal {}{}",
        report.done,
        indicatif::HumanBytes(report.freed),
        report.skipped,
        report.forgotten,
        name(&journal),
        if act.keeps_the_bytes() {
            format!(" (seekless dupes --undo {} puts them back)", name(&journal))
        } else {
            String::new()
        }
    );
    Ok(Code::from_errors(report.skipped + u64::from(failed)))
}

/// Says what a killed run's leftovers were removed, if any.
fn cleaned(c: &act::Cleaned) {
    if c.temps + c.infos > 0 {
        eprintln!(
            "seekless: dupes: removed what killed runs left: {} hard link temporaries, {} .trashinfo files",
            c.temps, c.infos
        );
    }
}

fn undo(journal: &Path) -> Result<Code> {
    let reporter = crate::progress::Console::new(false);
    let undone = act::undo(journal, &reporter)?;
    cleaned(&undone.cleaned);
    eprintln!(
        "seekless: dupes: {} files put back, {} already undone, {} failed{}",
        undone.restored,
        undone.already,
        undone.failed,
        if undone.kept > 0 {
            format!(
                "; {} hard links and reflinks cannot be undone (the keeper's bytes are the file's)",
                undone.kept
            )
        } else {
            String::new()
        }
    );
    if undone.restored > 0 {
        eprintln!("seekless: dupes: run seekless index again for the catalog to know them");
    }
    Ok(Code::from_errors(undone.failed))
}

fn print_decisions(out: &mut impl Write, list: &[Decision]) -> std::io::Result<()> {
    for d in list {
        let n = d.contents.len();
        write!(
            out,
            "{:>5}  {:<14}  {} content{}  {}",
            d.id.unwrap_or(0),
            d.decision.name(),
            n,
            if n == 1 { "" } else { "s" },
            d.made.as_deref().unwrap_or("")
        )?;
        if d.decision == DecisionKind::Keeper
            && let Some(p) = &d.path_bytes
        {
            write!(out, "  keep {}", escaped(p))?;
        }
        writeln!(out)?;
    }
    Ok(())
}

/// Groups separated by a blank line: a heading, then one line per file, the keeper marked
/// `*` and files kept for another reason `+`: dimensions (orientation applied), size, date
/// taken, pHash distance to the group's first file (similar groups and bursts; `copy`:
/// byte-identical to the keeper), path (escaped as `ls -b` does).
fn text(out: &mut impl Write, dupes: &Dupes) -> std::io::Result<()> {
    for (i, g) in dupes.groups.iter().enumerate() {
        if i > 0 {
            out.write_all(b"\n")?;
        }
        let n = g.members.len();
        let chosen = if g.decision.is_some() {
            " (keeper chosen by you)"
        } else {
            ""
        };
        match g.kind {
            GroupKind::Exact => writeln!(
                out,
                "exact: {n} identical files of {}, {} freed by keeping one ({} bytes){chosen}",
                indicatif::HumanBytes(g.members[0].size),
                indicatif::HumanBytes(g.saving),
                g.saving
            )?,
            GroupKind::Similar => writeln!(
                out,
                "similar: {n} files, {} freed by keeping one ({} bytes){chosen}",
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
            let mark = if m.keeper {
                '*'
            } else if m.protected.is_some() {
                '+'
            } else {
                ' '
            };
            write!(
                out,
                "{mark} {dims:>11} {:>10}  {taken:<19}  {distance}",
                indicatif::HumanBytes(m.size).to_string(),
            )?;
            out.write_all(escaped(&m.path_bytes).as_bytes())?;
            if let Some(why) = m.protected {
                write!(out, "  (kept: {why})")?;
            }
            out.write_all(b"\n")?;
        }
    }
    Ok(())
}
