//! `toolbelt skills ls|show`: the skills in a folder (Agent Skills format).

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use serde_json::json;
use toolbelt_router::SkillSet;

/// Subcommands of `toolbelt skills`.
#[derive(Debug, clap::Subcommand)]
pub(crate) enum SkillsCommand {
    /// List the skills: name and description (what routing sees).
    Ls {
        #[command(flatten)]
        dir: SkillsDir,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Show one skill: its front matter, files and instructions (what the agent adds when chosen).
    Show {
        /// The skill's name.
        name: String,
        #[command(flatten)]
        dir: SkillsDir,
    },
}

/// Where skills are read from.
#[derive(Debug, clap::Args)]
pub(crate) struct SkillsDir {
    /// A folder of skills (each a folder with SKILL.md), or one skill folder.
    #[arg(
        long = "skills",
        value_name = "DIR",
        env = "TOOLBELT_SKILLS_DIR",
        default_value = "skills"
    )]
    pub(crate) dir: PathBuf,
}

impl SkillsDir {
    pub(crate) fn load(&self) -> anyhow::Result<SkillSet> {
        SkillSet::load_dir(&self.dir)
            .with_context(|| format!("cannot load skills from {}", self.dir.display()))
    }
}

pub(crate) async fn run(cmd: SkillsCommand) -> anyhow::Result<ExitCode> {
    let mut out = std::io::stdout().lock();
    match cmd {
        SkillsCommand::Ls { dir, json } => {
            let skills = dir.load()?;
            if json {
                let list: Vec<_> = skills
                    .iter()
                    .map(|s| json!({"name": s.name, "description": s.description, "dir": s.dir, "files": s.files}))
                    .collect();
                serde_json::to_writer_pretty(&mut out, &json!({"skills": list}))?;
                writeln!(out)?;
            } else if skills.is_empty() {
                writeln!(out, "no skills in {}", dir.dir.display())?;
            } else {
                let width = skills.iter().map(|s| s.name.len()).max().unwrap_or(0);
                for s in skills.iter() {
                    writeln!(out, "{:<width$}  {}", s.name, s.description)?;
                }
            }
        }
        SkillsCommand::Show { name, dir } => {
            let skills = dir.load()?;
            let Some(s) = skills.get(&name) else {
                let known: Vec<&str> = skills.iter().map(|s| s.name.as_str()).collect();
                anyhow::bail!(
                    "no skill named `{name}` in {}; known: {}",
                    dir.dir.display(),
                    if known.is_empty() {
                        "none".to_owned()
                    } else {
                        known.join(", ")
                    }
                );
            };
            writeln!(out, "name:        {}", s.name)?;
            writeln!(out, "description: {}", s.description)?;
            for (k, v) in &s.metadata {
                writeln!(out, "{k}: {v}")?;
            }
            writeln!(out, "folder:      {}", s.dir.display())?;
            if !s.files.is_empty() {
                let files: Vec<String> = s.files.iter().map(|f| f.display().to_string()).collect();
                writeln!(out, "files:       {}", files.join(", "))?;
            }
            writeln!(out, "\n{}", s.instructions)?;
        }
    }
    Ok(ExitCode::SUCCESS)
}
