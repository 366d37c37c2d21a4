//! What a shell and `man` need, generated from the same clap definitions as the parser:
//! completion scripts (`clap_complete`) and the manual page (`clap_mangen`).

use std::io::Write;

use anyhow::Result;
use clap::CommandFactory;

use crate::exit::Code;

#[derive(clap::Args, Debug)]
pub struct CompletionArgs {
    /// The shell to complete for.
    #[arg(value_enum)]
    pub shell: clap_complete::Shell,
}

pub fn completions(args: CompletionArgs) -> Result<Code> {
    let mut cmd = crate::Cli::command();
    // Made whole first: clap_complete panics when its writer fails.
    let mut script = Vec::new();
    clap_complete::generate(args.shell, &mut cmd, "seekless", &mut script);
    let mut out = crate::output::stdout();
    out.write_all(&script)?;
    out.flush()?;
    Ok(Code::Ok)
}

/// One page for the whole command: its synopsis and description, then each job's own
/// synopsis and options (the jobs have no pages of their own to refer to).
pub fn man() -> Result<Code> {
    let cmd = crate::Cli::command();
    let top = clap_mangen::Man::new(cmd.clone());
    let mut page = Vec::new();
    top.render_title(&mut page)?;
    top.render_name_section(&mut page)?;
    top.render_synopsis_section(&mut page)?;
    top.render_description_section(&mut page)?;
    for sub in cmd.get_subcommands().filter(|s| s.get_name() != "help") {
        let name = format!("seekless {}", sub.get_name());
        writeln!(page, ".SH \"{}\"", name.to_uppercase())?;
        if let Some(about) = sub.get_about() {
            writeln!(page, ".PP\n\\&{}", roff_text(&about.to_string()))?;
        }
        let man = clap_mangen::Man::new(sub.clone().bin_name(name));
        man.render_synopsis_section(&mut page)?;
        man.render_options_section(&mut page)?;
    }
    top.render_version_section(&mut page)?;
    let mut out = crate::output::stdout();
    out.write_all(&page)?;
    out.flush()?;
    Ok(Code::Ok)
}

/// Text safe inside a roff paragraph: backslashes escaped.
fn roff_text(text: &str) -> String {
    text.replace('\\', "\\e")
}
