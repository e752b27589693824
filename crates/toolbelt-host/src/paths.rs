//! Where toolbelt keeps its data, one rule for every command and the server, and the check
//! that keeps that data out of the workspace a model can read and write.
//!
//! The data directory is `$TOOLBELT_DATA` when set, else `$XDG_DATA_HOME/toolbelt`, else
//! `$HOME/.local/share/toolbelt`. The default database is `toolbelt.db` in it, so a token, an
//! agent or a tool created by one command (or through the server) is seen by every other one
//! that is not told otherwise (`--database-url` / `TOOLBELT_DATABASE_URL`).

use std::path::{Path, PathBuf};

/// The variable that names the data directory.
pub const DATA_VAR: &str = "TOOLBELT_DATA";

/// Why the data location could not be found or is unsafe.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum PathsError {
    /// Neither `TOOLBELT_DATA`, `XDG_DATA_HOME` nor `HOME` is set.
    #[error(
        "no data directory: set TOOLBELT_DATA (or XDG_DATA_HOME, or HOME) or pass --database-url"
    )]
    NoDataDir,
    /// Data the server keeps (its database, the data directory, a secrets or token file)
    /// lies inside the workspace, where the file and shell tools, and so a model, could read
    /// or change it.
    #[error(
        "{what} {} lies inside the workspace {}, where the file and shell tools (and so a \
         model) could read or change it; keep it elsewhere ({hint}) or choose another \
         --workspace",
        path.display(), workspace.display()
    )]
    InsideWorkspace {
        /// What it is ("the database", "the data directory", "the secrets file").
        what: &'static str,
        /// Where it is.
        path: PathBuf,
        /// The workspace root.
        workspace: PathBuf,
        /// How to move it.
        hint: &'static str,
    },
    /// The workspace root cannot be resolved.
    #[error("cannot open the workspace {}: {source}", workspace.display())]
    Workspace {
        /// The workspace as given.
        workspace: PathBuf,
        /// What the file system said.
        #[source]
        source: std::io::Error,
    },
    /// The data directory could not be created.
    #[error("cannot create the data directory {}: {source}", path.display())]
    Create {
        /// The directory.
        path: PathBuf,
        /// What the file system said.
        #[source]
        source: std::io::Error,
    },
}

/// The data directory: `$TOOLBELT_DATA`, else `$XDG_DATA_HOME/toolbelt`, else
/// `$HOME/.local/share/toolbelt` (empty values count as unset).
///
/// # Errors
/// [`PathsError::NoDataDir`] when none of the three is set.
pub fn data_dir() -> Result<PathBuf, PathsError> {
    data_dir_from(|name| std::env::var_os(name))
}

fn data_dir_from(var: impl Fn(&str) -> Option<std::ffi::OsString>) -> Result<PathBuf, PathsError> {
    let set = |name: &str| var(name).filter(|v| !v.is_empty()).map(PathBuf::from);
    if let Some(dir) = set(DATA_VAR) {
        return Ok(dir);
    }
    if let Some(xdg) = set("XDG_DATA_HOME") {
        return Ok(xdg.join("toolbelt"));
    }
    set("HOME")
        .map(|home| home.join(".local").join("share").join("toolbelt"))
        .ok_or(PathsError::NoDataDir)
}

/// The default database: `sqlite://<data dir>/toolbelt.db`.
///
/// # Errors
/// As [`data_dir`].
pub fn default_database_url() -> Result<String, PathsError> {
    Ok(format!(
        "sqlite://{}",
        data_dir()?.join("toolbelt.db").display()
    ))
}

/// The file a `sqlite:` URL names (`None` for another engine or an in-memory database).
pub fn sqlite_file(url: &str) -> Option<PathBuf> {
    let rest = url
        .strip_prefix("sqlite://")
        .or_else(|| url.strip_prefix("sqlite:"))?;
    let path = rest.split('?').next().unwrap_or(rest);
    (!path.is_empty() && path != ":memory:").then(|| PathBuf::from(path))
}

/// Creates the directory of a SQLite database (and the data directory) when missing, readable
/// by the owner only. Other engines need nothing.
///
/// # Errors
/// [`PathsError::Create`] when the directory cannot be made.
pub fn prepare_database(url: &str) -> Result<(), PathsError> {
    let Some(dir) = sqlite_file(url).and_then(|f| f.parent().map(Path::to_path_buf)) else {
        return Ok(());
    };
    if dir.as_os_str().is_empty() || dir.exists() {
        return Ok(());
    }
    let mut builder = std::fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
    builder
        .create(&dir)
        .map_err(|source| PathsError::Create { path: dir, source })
}

/// What the server keeps that a model must not reach.
#[derive(Debug, Default, Clone)]
pub struct KeptData {
    database_url: Option<String>,
    files: Vec<(&'static str, PathBuf)>,
}

impl KeptData {
    /// Nothing yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// The database (only a SQLite file is a path to check).
    #[must_use]
    pub fn database(mut self, url: impl Into<String>) -> Self {
        self.database_url = Some(url.into());
        self
    }

    /// Another file or directory (`what` names it in the error: "the secrets file").
    #[must_use]
    pub fn file(mut self, what: &'static str, path: impl Into<PathBuf>) -> Self {
        self.files.push((what, path.into()));
        self
    }

    /// The secrets file named by `TOOLBELT_SECRETS_FILE`, when set.
    #[must_use]
    pub fn secrets_file_from_env(self) -> Self {
        match std::env::var_os(toolbelt_tools::declarative::FILE_VAR) {
            Some(path) if !path.is_empty() => self.file("the secrets file", path),
            _ => self,
        }
    }

    /// The paths to keep out of the file tools' reach: the database file with its journal
    /// files and its directory, each file given and its directory. A host passes them to
    /// [`toolbelt_tools::Workspace::with_reserved`], which ignores those outside the root and
    /// the root itself.
    pub fn reserved_paths(&self) -> Vec<PathBuf> {
        let mut out: Vec<PathBuf> = Vec::new();
        if let Some(db) = self.database_url.as_deref().and_then(sqlite_file) {
            let db = absolute(&db);
            for suffix in ["", "-wal", "-shm", "-journal"] {
                let mut name = db.clone().into_os_string();
                name.push(suffix);
                out.push(PathBuf::from(name));
            }
            if let Some(dir) = db.parent() {
                out.push(dir.to_path_buf());
            }
        }
        for (_, path) in &self.files {
            let path = absolute(path);
            if let Some(dir) = path.parent().filter(|_| !path.is_dir()) {
                out.push(dir.to_path_buf());
            }
            out.push(path);
        }
        out
    }

    /// Refuses data inside `workspace`: the database file and its directory, and every file
    /// given (symlinks resolved where the path exists).
    ///
    /// # Errors
    /// [`PathsError::InsideWorkspace`] naming the first one found inside;
    /// [`PathsError::Workspace`] when the workspace cannot be resolved.
    pub fn check_outside(&self, workspace: &Path) -> Result<(), PathsError> {
        let root = workspace
            .canonicalize()
            .map_err(|source| PathsError::Workspace {
                workspace: workspace.to_path_buf(),
                source,
            })?;
        let inside = |what: &'static str, path: &Path, hint: &'static str| {
            let resolved = resolved(path);
            if resolved.starts_with(&root) {
                Err(PathsError::InsideWorkspace {
                    what,
                    path: resolved,
                    workspace: root.clone(),
                    hint,
                })
            } else {
                Ok(())
            }
        };
        if let Some(db) = self.database_url.as_deref().and_then(sqlite_file) {
            inside(
                "the database",
                &db,
                "--database-url, TOOLBELT_DATABASE_URL or TOOLBELT_DATA",
            )?;
            if let Some(dir) = db.parent().filter(|d| !d.as_os_str().is_empty()) {
                inside(
                    "the database's directory",
                    dir,
                    "--database-url, TOOLBELT_DATABASE_URL or TOOLBELT_DATA",
                )?;
            }
        }
        for (what, path) in &self.files {
            inside(what, path, "move it, or point its variable elsewhere")?;
        }
        Ok(())
    }
}

/// The path made absolute against the current directory (lexically).
fn absolute(path: &Path) -> PathBuf {
    std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf())
}

/// The path with symlinks resolved as far as it exists: the nearest existing ancestor is
/// canonicalised and the missing rest appended.
fn resolved(path: &Path) -> PathBuf {
    let path = absolute(path);
    let mut existing = path.as_path();
    let mut rest = Vec::new();
    loop {
        if let Ok(real) = existing.canonicalize() {
            return rest.iter().rev().fold(real, |acc: PathBuf, n| acc.join(n));
        }
        match (existing.parent(), existing.file_name()) {
            (Some(parent), Some(name)) => {
                rest.push(name.to_owned());
                existing = parent;
            }
            _ => return path,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::ffi::OsString;

    fn env(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<OsString> {
        let pairs: Vec<(String, OsString)> = pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), OsString::from(v)))
            .collect();
        move |name| {
            pairs
                .iter()
                .find(|(k, _)| k == name)
                .map(|(_, v)| v.clone())
        }
    }

    #[test]
    fn the_data_directory_follows_toolbelt_data_then_xdg_then_home() {
        let all = env(&[
            ("TOOLBELT_DATA", "/d"),
            ("XDG_DATA_HOME", "/x"),
            ("HOME", "/h"),
        ]);
        assert_eq!(data_dir_from(all).unwrap(), PathBuf::from("/d"));
        let xdg = env(&[
            ("TOOLBELT_DATA", ""),
            ("XDG_DATA_HOME", "/x"),
            ("HOME", "/h"),
        ]);
        assert_eq!(data_dir_from(xdg).unwrap(), PathBuf::from("/x/toolbelt"));
        let home = env(&[("HOME", "/h")]);
        assert_eq!(
            data_dir_from(home).unwrap(),
            PathBuf::from("/h/.local/share/toolbelt")
        );
        assert!(matches!(
            data_dir_from(env(&[])),
            Err(PathsError::NoDataDir)
        ));
    }

    #[test]
    fn sqlite_urls_name_their_file() {
        assert_eq!(
            sqlite_file("sqlite:///var/lib/t/toolbelt.db?mode=rwc"),
            Some(PathBuf::from("/var/lib/t/toolbelt.db"))
        );
        assert_eq!(
            sqlite_file("sqlite://toolbelt.db"),
            Some(PathBuf::from("toolbelt.db"))
        );
        assert_eq!(sqlite_file("sqlite::memory:"), None);
        assert_eq!(sqlite_file("postgres://u@h/db"), None);
    }

    #[test]
    fn data_inside_the_workspace_is_refused_and_data_beside_it_is_not() {
        let dir = tempfile::tempdir().unwrap();
        let workspace = dir.path().join("work");
        let data = dir.path().join("data");
        std::fs::create_dir_all(&workspace).unwrap();
        std::fs::create_dir_all(&data).unwrap();

        let outside =
            KeptData::new().database(format!("sqlite://{}", data.join("toolbelt.db").display()));
        outside.check_outside(&workspace).unwrap();

        let inside = KeptData::new().database(format!(
            "sqlite://{}",
            workspace.join(".toolbelt/toolbelt.db").display()
        ));
        let err = inside.check_outside(&workspace).unwrap_err().to_string();
        assert!(err.contains("the database"), "{err}");
        assert!(err.contains("--workspace"), "{err}");

        // A symlink in the workspace that leads to the data does not make the data inside;
        // a path through a symlink that leads into the workspace does.
        std::os::unix::fs::symlink(&workspace, data.join("into-work")).unwrap();
        let through = KeptData::new().file("the secrets file", data.join("into-work/secrets"));
        let err = through.check_outside(&workspace).unwrap_err().to_string();
        assert!(err.contains("the secrets file"), "{err}");

        // Postgres keeps no file here.
        KeptData::new()
            .database("postgres://u@h/db")
            .check_outside(&workspace)
            .unwrap();
    }
}
