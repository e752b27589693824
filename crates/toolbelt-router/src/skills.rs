//! Skills in the Agent Skills format, routed beside tools.
//!
//! A skill is a folder with a `SKILL.md`: YAML front matter with `name` and
//! `description`, then the instructions (Markdown); other files beside it are
//! resources the instructions may point to. Only the name and description are
//! indexed and shown to a router; an agent adds a chosen skill's instructions
//! to the turn, so unchosen skills cost no tokens.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::decision::ScoredTool;
use crate::index::{LexicalConfig, LexicalIndex};
use crate::tool_text::ToolText;

/// Longest skill name accepted (the Agent Skills limit).
pub const MAX_SKILL_NAME: usize = 64;
/// Longest description accepted (the Agent Skills limit).
pub const MAX_SKILL_DESCRIPTION: usize = 1024;

/// Why a skill could not be read.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SkillError {
    /// A file or folder could not be read.
    #[error("cannot read {}", path.display())]
    Io {
        /// The path.
        path: PathBuf,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
    /// `SKILL.md` is not in the expected form.
    #[error("{}: {reason}", path.display())]
    Invalid {
        /// The `SKILL.md` file.
        path: PathBuf,
        /// What is wrong.
        reason: String,
    },
    /// Two skills have the same name.
    #[error("skill `{name}` is defined twice: {} and {}", first.display(), second.display())]
    Duplicate {
        /// The name.
        name: String,
        /// The first folder.
        first: PathBuf,
        /// The second folder.
        second: PathBuf,
    },
}

/// One skill: what routers see (name, description) and what the agent adds when chosen.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Skill {
    /// The skill's name (`lowercase-with-hyphens`, at most 64 characters).
    pub name: String,
    /// When to use it (at most 1,024 characters); the only text routed on.
    pub description: String,
    /// The Markdown after the front matter.
    pub instructions: String,
    /// The other top-level front-matter keys whose values are plain text (`license`, ...).
    pub metadata: BTreeMap<String, String>,
    /// The skill's folder.
    pub dir: PathBuf,
    /// Files beside `SKILL.md`, relative to `dir`, sorted.
    pub files: Vec<PathBuf>,
}

impl Skill {
    /// Parses the text of a `SKILL.md` found in `dir`.
    ///
    /// # Errors
    /// [`SkillError::Invalid`] when the front matter is missing or unclosed, or
    /// `name` / `description` is missing, empty, too long, or (for `name`) not
    /// lowercase letters, digits and hyphens.
    pub fn parse(text: &str, dir: impl Into<PathBuf>) -> Result<Self, SkillError> {
        let dir = dir.into();
        let path = dir.join("SKILL.md");
        let invalid = |reason: String| SkillError::Invalid {
            path: path.clone(),
            reason,
        };
        let text = text.strip_prefix('\u{feff}').unwrap_or(text);
        let rest = text
            .strip_prefix("---\n")
            .or_else(|| text.strip_prefix("---\r\n"))
            .ok_or_else(|| invalid("does not start with `---` front matter".to_owned()))?;
        let (front, body) = split_front_matter(rest)
            .ok_or_else(|| invalid("front matter is not closed by a `---` line".to_owned()))?;
        let mut fields = parse_front_matter(front);
        let mut take = |key: &str| -> Result<String, SkillError> {
            let value = fields.remove(key).unwrap_or_default();
            if value.trim().is_empty() {
                return Err(invalid(format!("front matter has no `{key}`")));
            }
            Ok(value.trim().to_owned())
        };
        let name = take("name")?;
        let description = take("description")?;
        check_fields(&name, &description).map_err(invalid)?;
        Ok(Self {
            name,
            description,
            instructions: body.trim().to_owned(),
            metadata: fields,
            dir,
            files: Vec::new(),
        })
    }

    /// A skill from its parts (one kept in a database, say), checked as [`Skill::parse`]
    /// checks the front matter. It has no folder (`dir` is empty) and no files until set.
    ///
    /// # Errors
    /// [`SkillError::Invalid`] (its path is `<name>/SKILL.md`) when `name` or
    /// `description` breaks the rules of [`Skill::parse`].
    pub fn from_parts(
        name: impl Into<String>,
        description: impl Into<String>,
        instructions: impl Into<String>,
    ) -> Result<Self, SkillError> {
        let (name, description) = (name.into(), description.into());
        check_fields(&name, description.trim()).map_err(|reason| SkillError::Invalid {
            path: Path::new(&name).join("SKILL.md"),
            reason,
        })?;
        Ok(Self {
            name,
            description: description.trim().to_owned(),
            instructions: instructions.into().trim().to_owned(),
            metadata: BTreeMap::new(),
            dir: PathBuf::new(),
            files: Vec::new(),
        })
    }

    /// Reads the skill in folder `dir` (its `SKILL.md` and the list of files beside it).
    ///
    /// # Errors
    /// [`SkillError::Io`] when the folder or `SKILL.md` cannot be read, else as [`Skill::parse`].
    pub fn read(dir: impl AsRef<Path>) -> Result<Self, SkillError> {
        let dir = dir.as_ref();
        let path = dir.join("SKILL.md");
        let text = std::fs::read_to_string(&path).map_err(|source| SkillError::Io {
            path: path.clone(),
            source,
        })?;
        let mut skill = Self::parse(&text, dir)?;
        let mut files = Vec::new();
        list_files(dir, dir, 0, &mut files)?;
        files.retain(|f| f != Path::new("SKILL.md"));
        files.sort();
        skill.files = files;
        Ok(skill)
    }
}

/// Why `name` or `description` breaks the Agent Skills rules, if either does.
fn check_fields(name: &str, description: &str) -> Result<(), String> {
    if name.is_empty() {
        return Err("`name` is empty".to_owned());
    }
    if description.is_empty() {
        return Err("`description` is empty".to_owned());
    }
    if name.len() > MAX_SKILL_NAME
        || !name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
    {
        return Err(format!(
            "`name` {name:?} must be 1-{MAX_SKILL_NAME} lowercase letters, digits or hyphens"
        ));
    }
    if description.chars().count() > MAX_SKILL_DESCRIPTION {
        return Err(format!(
            "`description` has {} characters; at most {MAX_SKILL_DESCRIPTION}",
            description.chars().count()
        ));
    }
    Ok(())
}

/// Files under `dir`, relative to `root`, three levels deep at most (skills are small).
fn list_files(
    root: &Path,
    dir: &Path,
    depth: usize,
    out: &mut Vec<PathBuf>,
) -> Result<(), SkillError> {
    let io = |source| SkillError::Io {
        path: dir.to_owned(),
        source,
    };
    for entry in std::fs::read_dir(dir).map_err(io)? {
        let entry = entry.map_err(io)?;
        let kind = entry.file_type().map_err(io)?;
        let path = entry.path();
        if kind.is_dir() && depth < 3 {
            list_files(root, &path, depth + 1, out)?;
        } else if kind.is_file()
            && let Ok(rel) = path.strip_prefix(root)
        {
            out.push(rel.to_owned());
        }
    }
    Ok(())
}

/// The front matter and the body after the closing `---` line.
fn split_front_matter(rest: &str) -> Option<(&str, &str)> {
    let mut at = 0usize;
    for line in rest.split_inclusive('\n') {
        if line.trim_end() == "---" {
            return Some((&rest[..at], &rest[at + line.len()..]));
        }
        at += line.len();
    }
    None
}

/// Top-level `key: value` pairs of a YAML front matter: plain, quoted and folded
/// (`>`/`|`) scalars. Nested maps and lists are skipped (not needed for routing).
fn parse_front_matter(front: &str) -> BTreeMap<String, String> {
    let mut fields = BTreeMap::new();
    let lines: Vec<&str> = front.lines().collect();
    let mut i = 0;
    while i < lines.len() {
        let line = lines[i];
        i += 1;
        if line.starts_with([' ', '\t', '#', '-']) || line.trim().is_empty() {
            continue;
        }
        let Some((key, value)) = line.split_once(':') else {
            continue;
        };
        let key = key.trim().to_owned();
        let value = value.trim();
        // Indented lines that follow belong to this key.
        let mut block = Vec::new();
        while i < lines.len() && (lines[i].starts_with([' ', '\t']) || lines[i].trim().is_empty()) {
            block.push(lines[i].trim());
            i += 1;
        }
        while block.last().is_some_and(|l| l.is_empty()) {
            block.pop();
        }
        let text = match value {
            v if v.starts_with('>') => block.join(" "),
            v if v.starts_with('|') => block.join("\n"),
            "" if block.iter().any(|l| l.starts_with('-') || l.contains(": ")) => continue,
            "" => block.join(" "),
            v => {
                let mut all = vec![v];
                all.extend(block);
                unquote(&all.join(" "))
            }
        };
        fields.insert(key, text);
    }
    fields
}

fn unquote(v: &str) -> String {
    let v = v.trim();
    if v.len() >= 2 && v.starts_with('"') && v.ends_with('"') {
        v[1..v.len() - 1]
            .replace("\\\"", "\"")
            .replace("\\n", "\n")
            .replace("\\\\", "\\")
    } else if v.len() >= 2 && v.starts_with('\'') && v.ends_with('\'') {
        v[1..v.len() - 1].replace("''", "'")
    } else {
        v.to_owned()
    }
}

/// A set of skills with a BM25 index over their names and descriptions.
#[derive(Debug, Clone)]
pub struct SkillSet {
    skills: Vec<Skill>,
    index: std::sync::Arc<LexicalIndex>,
}

impl Default for SkillSet {
    fn default() -> Self {
        Self::new(Vec::new())
    }
}

impl SkillSet {
    /// Indexes `skills` (a later skill with the same name replaces an earlier one).
    pub fn new(skills: Vec<Skill>) -> Self {
        let mut index = LexicalIndex::new(LexicalConfig::default());
        for skill in &skills {
            index.upsert_text(&ToolText {
                name: skill.name.clone(),
                description: skill.description.clone(),
                ..ToolText::default()
            });
        }
        Self {
            skills,
            index: std::sync::Arc::new(index),
        }
    }

    /// Reads every skill under `dir`: `dir` itself when it holds a `SKILL.md`,
    /// else each sub-folder that does (sorted by folder name).
    ///
    /// # Errors
    /// [`SkillError`] for the first folder that cannot be read or parsed, or a repeated name.
    pub fn load_dir(dir: impl AsRef<Path>) -> Result<Self, SkillError> {
        let dir = dir.as_ref();
        if dir.join("SKILL.md").is_file() {
            return Ok(Self::new(vec![Skill::read(dir)?]));
        }
        let io = |source| SkillError::Io {
            path: dir.to_owned(),
            source,
        };
        let mut folders = Vec::new();
        for entry in std::fs::read_dir(dir).map_err(io)? {
            let path = entry.map_err(io)?.path();
            if path.join("SKILL.md").is_file() {
                folders.push(path);
            }
        }
        folders.sort();
        let mut skills: Vec<Skill> = Vec::new();
        for folder in folders {
            let skill = Skill::read(&folder)?;
            if let Some(first) = skills.iter().find(|s| s.name == skill.name) {
                return Err(SkillError::Duplicate {
                    name: skill.name,
                    first: first.dir.clone(),
                    second: folder,
                });
            }
            skills.push(skill);
        }
        Ok(Self::new(skills))
    }

    /// The skills, in load order.
    pub fn iter(&self) -> impl Iterator<Item = &Skill> + '_ {
        self.skills.iter()
    }

    /// How many skills there are.
    pub fn len(&self) -> usize {
        self.skills.len()
    }

    /// Whether there is no skill.
    pub fn is_empty(&self) -> bool {
        self.skills.is_empty()
    }

    /// The skill named `name`.
    pub fn get(&self, name: &str) -> Option<&Skill> {
        self.skills.iter().find(|s| s.name == name)
    }

    /// The best `k` skills for `query` by BM25 over name and description.
    pub fn rank(&self, query: &str, k: usize) -> Vec<ScoredTool> {
        self.index.search(query, k)
    }
}
