//! [`Workspace`]: the directory file, shell and git tools may touch.

use std::io;
use std::path::{Component, Path, PathBuf};

use toolbelt_core::{ToolContext, ToolError};

/// Why a path was refused or a workspace could not be opened.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum WorkspaceError {
    /// The workspace root does not exist or is not a directory.
    #[error("workspace root {} is not a directory", root.display())]
    NotADirectory {
        /// The root as given.
        root: PathBuf,
    },
    /// The root could not be canonicalised.
    #[error("cannot open workspace root {}", root.display())]
    Root {
        /// The root as given.
        root: PathBuf,
        /// What the file system said.
        #[source]
        source: io::Error,
    },
    /// The path resolves outside the workspace root (through `..`, an absolute path or a symlink).
    #[error("path {path:?} resolves to {} which is outside the workspace root {}", resolved.display(), root.display())]
    Escapes {
        /// The path as the model wrote it.
        path: String,
        /// Where it leads.
        resolved: PathBuf,
        /// The workspace root.
        root: PathBuf,
    },
    /// The path names nothing.
    #[error("path {path:?} does not exist in the workspace")]
    NotFound {
        /// The path as the model wrote it.
        path: String,
    },
    /// A symlink on the path points nowhere, so where it leads cannot be checked.
    #[error("path {path:?} goes through a broken symlink at {}", link.display())]
    BrokenLink {
        /// The path as the model wrote it.
        path: String,
        /// The dangling link.
        link: PathBuf,
    },
    /// A path to create contains `..` after its last existing directory.
    #[error("path {path:?} has `..` after a directory that does not exist yet")]
    DotDotAfterMissing {
        /// The path as the model wrote it.
        path: String,
    },
    /// Any other file system error while resolving.
    #[error("cannot resolve path {path:?}")]
    Io {
        /// The path as the model wrote it.
        path: String,
        /// What the file system said.
        #[source]
        source: io::Error,
    },
}

impl From<WorkspaceError> for ToolError {
    fn from(err: WorkspaceError) -> Self {
        match err {
            WorkspaceError::Escapes { .. } | WorkspaceError::BrokenLink { .. } => {
                ToolError::Denied {
                    reason: err.to_string(),
                }
            }
            WorkspaceError::Io { ref source, .. } => ToolError::failed(format!("{err}: {source}")),
            other => ToolError::failed(other.to_string()),
        }
    }
}

/// The canonical root directory that file, shell and git tools are confined to.
///
/// Every path a model gives is joined to the root (or taken as is when
/// absolute), canonicalised (resolving `..` and every symlink), and refused
/// unless the result is inside the root. Paths that do not exist yet (a file
/// to create) are checked through their nearest existing ancestor.
///
/// Tools find the workspace with `ctx.get::<Workspace>()`; there is no implicit
/// default: a host that wants the current directory says so with
/// [`Workspace::current_dir`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Workspace {
    root: PathBuf,
    max_read_bytes: u64,
}

/// Default cap of [`Workspace::max_read_bytes`]: 1 MiB.
pub const DEFAULT_MAX_READ_BYTES: u64 = 1024 * 1024;

impl Workspace {
    /// Opens `root`, which must be an existing directory; it is canonicalised once here.
    ///
    /// # Errors
    /// [`WorkspaceError::Root`] when `root` cannot be resolved,
    /// [`WorkspaceError::NotADirectory`] when it is not a directory.
    pub fn new(root: impl AsRef<Path>) -> Result<Self, WorkspaceError> {
        let given = root.as_ref();
        let root = given
            .canonicalize()
            .map_err(|source| WorkspaceError::Root {
                root: given.to_path_buf(),
                source,
            })?;
        if !root.is_dir() {
            return Err(WorkspaceError::NotADirectory { root });
        }
        Ok(Self {
            root,
            max_read_bytes: DEFAULT_MAX_READ_BYTES,
        })
    }

    /// The process's current directory as the workspace (an explicit choice of the host).
    ///
    /// # Errors
    /// As [`Workspace::new`].
    pub fn current_dir() -> Result<Self, WorkspaceError> {
        let dir = std::env::current_dir().map_err(|source| WorkspaceError::Root {
            root: PathBuf::from("."),
            source,
        })?;
        Self::new(dir)
    }

    /// Largest file `file_read` and `file_edit` load whole (default 1 MiB);
    /// larger files can still be read by line range.
    #[must_use]
    pub fn with_max_read_bytes(mut self, bytes: u64) -> Self {
        self.max_read_bytes = bytes;
        self
    }

    /// The canonical root.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The read cap; see [`Workspace::with_max_read_bytes`].
    pub fn max_read_bytes(&self) -> u64 {
        self.max_read_bytes
    }

    /// The workspace of a call.
    ///
    /// # Errors
    /// [`ToolError::Failed`] telling the host to install one.
    pub fn from_context(ctx: &ToolContext) -> Result<&Self, ToolError> {
        ctx.get::<Self>().ok_or_else(|| {
            ToolError::failed(
                "the workspace is not configured; the host must add a `Workspace` extension \
                 to the tool context (see `toolbelt_tools::BuiltinConfig`)",
            )
        })
    }

    /// Resolves an existing path inside the workspace.
    ///
    /// # Errors
    /// [`WorkspaceError::NotFound`] when nothing is there, [`WorkspaceError::Escapes`]
    /// when it leads outside the root.
    pub fn resolve(&self, path: &str) -> Result<PathBuf, WorkspaceError> {
        let joined = self.join(path);
        let resolved = match joined.canonicalize() {
            Ok(p) => p,
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                // Report an escape before "not found" so `../../etc/nothing` is
                // not an oracle for what exists outside.
                self.resolve_for_write(path)?;
                return Err(WorkspaceError::NotFound {
                    path: path.to_owned(),
                });
            }
            Err(source) => {
                return Err(WorkspaceError::Io {
                    path: path.to_owned(),
                    source,
                });
            }
        };
        self.check_inside(path, resolved)
    }

    /// Resolves a path that may not exist yet (a file to create).
    ///
    /// The nearest existing ancestor is canonicalised and checked; the missing
    /// rest must be plain names (no `..`). An existing path is resolved as by
    /// [`Workspace::resolve`], so writing through a symlink writes its target,
    /// which must be inside the root too.
    ///
    /// # Errors
    /// [`WorkspaceError::Escapes`], [`WorkspaceError::BrokenLink`] or
    /// [`WorkspaceError::DotDotAfterMissing`].
    pub fn resolve_for_write(&self, path: &str) -> Result<PathBuf, WorkspaceError> {
        let joined = self.join(path);
        let mut existing = joined.as_path();
        let mut missing: Vec<&std::ffi::OsStr> = Vec::new();
        loop {
            match existing.symlink_metadata() {
                Ok(_) => break,
                Err(e) if e.kind() == io::ErrorKind::NotFound => {}
                Err(source) => {
                    return Err(WorkspaceError::Io {
                        path: path.to_owned(),
                        source,
                    });
                }
            }
            match (existing.parent(), existing.components().next_back()) {
                (Some(parent), Some(Component::Normal(name))) => {
                    missing.push(name);
                    existing = parent;
                }
                (Some(parent), Some(Component::CurDir)) => existing = parent,
                (_, Some(Component::ParentDir)) => {
                    return Err(WorkspaceError::DotDotAfterMissing {
                        path: path.to_owned(),
                    });
                }
                _ => {
                    return Err(WorkspaceError::NotFound {
                        path: path.to_owned(),
                    });
                }
            }
        }
        let base = existing.canonicalize().map_err(|source| {
            if source.kind() == io::ErrorKind::NotFound {
                WorkspaceError::BrokenLink {
                    path: path.to_owned(),
                    link: existing.to_path_buf(),
                }
            } else {
                WorkspaceError::Io {
                    path: path.to_owned(),
                    source,
                }
            }
        })?;
        // `..` inside the missing part was rejected above, so appending plain
        // names keeps the result under `base`.
        let resolved = missing.iter().rev().fold(base, |acc, name| acc.join(name));
        self.check_inside(path, resolved)
    }

    /// The path relative to the root, for messages (`.` for the root itself).
    pub fn display_path(&self, resolved: &Path) -> String {
        match resolved.strip_prefix(&self.root) {
            Ok(rel) if rel.as_os_str().is_empty() => ".".to_owned(),
            Ok(rel) => rel.display().to_string(),
            Err(_) => resolved.display().to_string(),
        }
    }

    fn join(&self, path: &str) -> PathBuf {
        let trimmed = if path.is_empty() { "." } else { path };
        // `join` keeps an absolute path as it is; it is then checked like any other.
        self.root.join(trimmed)
    }

    fn check_inside(&self, path: &str, resolved: PathBuf) -> Result<PathBuf, WorkspaceError> {
        if resolved.starts_with(&self.root) {
            Ok(resolved)
        } else {
            Err(WorkspaceError::Escapes {
                path: path.to_owned(),
                resolved,
                root: self.root.clone(),
            })
        }
    }
}

#[cfg(test)]
mod tests;
