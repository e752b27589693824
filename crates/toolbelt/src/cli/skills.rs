//! `toolbelt skills ls|show|add|rm`: skills (Agent Skills format) in a folder or in the database.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context;
use serde_json::json;
use toolbelt_router::{Skill, SkillSet};
use toolbelt_store::{SkillSpec, Store, Stored};

use super::db::DbArgs;

/// Subcommands of `toolbelt skills`.
#[derive(Debug, clap::Subcommand)]
pub(crate) enum SkillsCommand {
    /// List the skills: name and description (what routing sees).
    #[command(visible_alias = "list")]
    Ls {
        #[command(flatten)]
        source: SkillsSource,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Show one skill: its front matter, files and instructions (what the agent adds when chosen).
    Show {
        /// The skill's name.
        name: String,
        #[command(flatten)]
        source: SkillsSource,
    },
    /// Store one skill folder, or every skill folder under DIR, in the database
    /// (a stored skill of the same name is replaced when its content differs).
    Add {
        /// A skill folder (with SKILL.md) or a folder of them.
        dir: PathBuf,
        #[command(flatten)]
        db: DbArgs,
    },
    /// Remove a skill from the database.
    Rm {
        /// The skill's name.
        name: String,
        #[command(flatten)]
        db: DbArgs,
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

/// The folder, or the database when one is given.
#[derive(Debug, clap::Args)]
pub(crate) struct SkillsSource {
    #[command(flatten)]
    dir: SkillsDir,
    /// Read the skills stored in this database (`sqlite://PATH` or `postgres://USER@HOST/DB`)
    /// instead of the folder.
    #[arg(
        long = "database-url",
        env = "TOOLBELT_DATABASE_URL",
        value_name = "URL"
    )]
    db: Option<String>,
}

impl SkillsSource {
    /// The skills, and where they came from (for messages).
    async fn load(&self) -> anyhow::Result<(SkillSet, String)> {
        match &self.db {
            Some(url) => {
                let store = DbArgs::with_url(url.clone()).open().await?;
                let skills = stored_skills(&store).await;
                store.close().await;
                Ok((skills?, "the database".to_owned()))
            }
            None => Ok((self.dir.load()?, self.dir.dir.display().to_string())),
        }
    }
}

/// The skills stored in `store`.
pub(crate) async fn stored_skills(store: &Store) -> anyhow::Result<SkillSet> {
    let records = store
        .skills()
        .list()
        .await
        .context("reading the stored skills")?;
    let skills = records
        .into_iter()
        .map(skill_of)
        .collect::<anyhow::Result<Vec<_>>>()?;
    Ok(SkillSet::new(skills))
}

fn skill_of(record: Stored<SkillSpec>) -> anyhow::Result<Skill> {
    let spec = record.into_value();
    let mut skill = Skill::from_parts(&spec.name, &spec.description, &spec.instructions)
        .with_context(|| format!("stored skill `{}`", spec.name))?;
    skill.metadata = spec.metadata;
    skill.files = spec.files.into_iter().map(PathBuf::from).collect();
    Ok(skill)
}

/// What the store keeps of `skill` (file paths with `/` on every platform).
fn spec_of(skill: &Skill) -> SkillSpec {
    let files = skill
        .files
        .iter()
        .map(|f| {
            f.components()
                .map(|c| c.as_os_str().to_string_lossy().into_owned())
                .collect::<Vec<_>>()
                .join("/")
        })
        .collect();
    SkillSpec::new(&skill.name, &skill.description, &skill.instructions)
        .with_metadata(skill.metadata.clone())
        .with_files(files)
}

/// The skills `toolbelt run` gives its agent: the stored ones when the database has any,
/// else those of the skills folder when it exists. A folder that cannot be read is
/// reported and skipped: the run goes on without skills.
pub(crate) async fn for_run(store: Option<&Store>, dir: &SkillsDir) -> anyhow::Result<SkillSet> {
    if let Some(store) = store {
        let skills = stored_skills(store).await?;
        if !skills.is_empty() {
            return Ok(skills);
        }
    }
    if !dir.dir.is_dir() {
        return Ok(SkillSet::default());
    }
    match dir.load() {
        Ok(skills) => Ok(skills),
        Err(e) => {
            eprintln!("warning: running without skills: {e:#}");
            Ok(SkillSet::default())
        }
    }
}

pub(crate) async fn run(cmd: SkillsCommand) -> anyhow::Result<ExitCode> {
    let mut out = std::io::stdout().lock();
    match cmd {
        SkillsCommand::Ls { source, json } => {
            let (skills, from) = source.load().await?;
            if json {
                let list: Vec<_> = skills
                    .iter()
                    .map(|s| json!({"name": s.name, "description": s.description, "dir": dir_json(&s.dir), "files": s.files}))
                    .collect();
                serde_json::to_writer_pretty(&mut out, &json!({"skills": list}))?;
                writeln!(out)?;
            } else if skills.is_empty() {
                writeln!(out, "no skills in {from}")?;
            } else {
                let width = skills.iter().map(|s| s.name.len()).max().unwrap_or(0);
                for s in skills.iter() {
                    writeln!(out, "{:<width$}  {}", s.name, s.description)?;
                }
            }
        }
        SkillsCommand::Show { name, source } => {
            let (skills, from) = source.load().await?;
            let Some(s) = skills.get(&name) else {
                let known: Vec<&str> = skills.iter().map(|s| s.name.as_str()).collect();
                anyhow::bail!(
                    "no skill named `{name}` in {from}; known: {}",
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
            if !s.dir.as_os_str().is_empty() {
                writeln!(out, "folder:      {}", s.dir.display())?;
            }
            if !s.files.is_empty() {
                let files: Vec<String> = s.files.iter().map(|f| f.display().to_string()).collect();
                writeln!(out, "files:       {}", files.join(", "))?;
            }
            writeln!(out, "\n{}", s.instructions)?;
        }
        SkillsCommand::Add { dir, db } => {
            let skills = SkillSet::load_dir(&dir)
                .with_context(|| format!("cannot load skills from {}", dir.display()))?;
            if skills.is_empty() {
                anyhow::bail!(
                    "no skills in {}: expected a folder with a SKILL.md, or folders of them",
                    dir.display()
                );
            }
            let store = db.open().await?;
            let by = super::agents::who();
            for skill in skills.iter() {
                let (_, change) = store
                    .skills()
                    .put(&spec_of(skill), &by)
                    .await
                    .with_context(|| format!("storing skill `{}`", skill.name))?;
                writeln!(out, "{} {}", change.as_str(), skill.name)?;
            }
            store.close().await;
        }
        SkillsCommand::Rm { name, db } => {
            let store = db.open().await?;
            store.skills().delete(&name).await?;
            store.close().await;
            writeln!(out, "removed {name}")?;
        }
    }
    Ok(ExitCode::SUCCESS)
}

fn dir_json(dir: &Path) -> serde_json::Value {
    if dir.as_os_str().is_empty() {
        serde_json::Value::Null
    } else {
        json!(dir)
    }
}
