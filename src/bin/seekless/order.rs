//! `seekless order`: print files in physical order (or another order) for other tools.

use std::io::{self, BufWriter, Write};

use anyhow::Result;
use seekless::{Order, Plan};

use crate::exit::Code;
use crate::inputs::InputArgs;
use crate::options::ReportArgs;
use crate::output::{json_path, print_summary, write_path_to};
use crate::progress::Console;

#[derive(clap::Args, Debug)]
pub struct Args {
    #[command(flatten)]
    pub input: InputArgs,

    /// The order to print: physical (what seekless reads in), or another for comparison.
    #[arg(long, value_enum, default_value_t = ByArg::Physical, value_name = "ORDER")]
    pub by: ByArg,

    /// One line per file: disk, device offset, extents, size, strategy, path.
    #[arg(short, long, conflicts_with = "json")]
    pub long: bool,

    /// One JSON object per line.
    #[arg(long)]
    pub json: bool,

    #[command(flatten)]
    pub report: ReportArgs,
}

#[derive(clap::ValueEnum, Clone, Copy, Debug)]
pub enum ByArg {
    Physical,
    Inode,
    Path,
    Given,
}

impl From<ByArg> for Order {
    fn from(b: ByArg) -> Order {
        match b {
            ByArg::Physical => Order::Physical,
            ByArg::Inode => Order::Inode,
            ByArg::Path => Order::Path,
            ByArg::Given => Order::Given,
        }
    }
}

pub fn run(args: Args) -> Result<Code> {
    let paths = args.input.paths()?;
    let opts = args.input.plan_options()?;
    let console = Console::new(args.report.verbose);
    let plan = Plan::build(&paths, &opts, &console);
    console.finish();

    let mut out = BufWriter::with_capacity(1 << 16, crate::output::stdout());
    let end = if args.input.null { 0 } else { b'\n' };
    // A list read by a person: names escaped (`-0` and `--json` stay exact).
    let terminal = !args.input.null && io::IsTerminal::is_terminal(&io::stdout());
    for i in plan.order(args.by.into()) {
        let f = &plan.files()[i as usize];
        if args.json {
            let (path, bytes) = json_path(&f.entry.path);
            let mut obj = serde_json::json!({
                "path": path,
                "disk": plan.disks()[f.disk as usize].name,
                "offset": f.disk_offset(),
                "extents": f.placement.extent_count,
                "size": f.entry.size,
                "dev": f.entry.id.dev,
                "ino": f.entry.id.ino,
                "strategy": f.placement.strategy,
                "flags": f.placement.flags.names(),
            });
            if let Some(bytes) = bytes {
                obj["path_bytes"] = serde_json::json!(bytes);
            }
            serde_json::to_writer(&mut out, &obj)?;
            out.write_all(b"\n")?;
        } else if args.long {
            let offset = f
                .disk_offset()
                .map_or_else(|| "-".to_string(), |o| o.to_string());
            write!(
                out,
                "{}\t{}\t{}\t{}\t{}\t",
                plan.disks()[f.disk as usize].name,
                offset,
                f.placement.extent_count,
                f.entry.size,
                f.placement.strategy
            )?;
            write_path_to(&mut out, &f.entry.path, end, terminal)?;
        } else {
            write_path_to(&mut out, &f.entry.path, end, terminal)?;
        }
    }
    out.flush()?;
    drop(out);

    if args.report.summary || console.is_terminal() {
        print_summary(&plan);
    }
    Ok(Code::from_errors(console.errors()))
}
