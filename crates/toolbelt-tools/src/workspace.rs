//! [`Workspace`]: the directory file, shell and git tools may touch.

use std::ffi::OsStr;
use std::io;
use std::os::fd::OwnedFd;
use std::path::{Component, Path, PathBuf};
use std::sync::Arc;

use rustix::fs::{AtFlags, Mode, OFlags, ResolveFlags};

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
    /// The path lies in a directory the host keeps for itself (its database, its secrets).
    #[error("path {path:?} is in {}, which holds the server's own data; the file tools never touch it", area.display())]
    Reserved {
        /// The path as the model wrote it.
        path: String,
        /// The reserved directory.
        area: PathBuf,
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
            WorkspaceError::Escapes { .. }
            | WorkspaceError::BrokenLink { .. }
            | WorkspaceError::Reserved { .. } => ToolError::Denied {
                reason: err.to_string(),
            },
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
#[derive(Debug, Clone)]
pub struct Workspace {
    root: PathBuf,
    /// The root, opened once: every file operation resolves beneath this descriptor.
    root_fd: Arc<OwnedFd>,
    max_read_bytes: u64,
    allow_git_writes: bool,
    /// Directories inside the root that no file tool reads, lists or writes.
    reserved: Arc<[PathBuf]>,
}

impl PartialEq for Workspace {
    fn eq(&self, other: &Self) -> bool {
        self.root == other.root
            && self.max_read_bytes == other.max_read_bytes
            && self.allow_git_writes == other.allow_git_writes
            && self.reserved == other.reserved
    }
}

impl Eq for Workspace {}

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
        let root_fd = rustix::fs::open(
            &root,
            OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC,
            Mode::empty(),
        )
        .map_err(|e| WorkspaceError::Root {
            root: root.clone(),
            source: e.into(),
        })?;
        Ok(Self {
            root,
            root_fd: Arc::new(root_fd),
            max_read_bytes: DEFAULT_MAX_READ_BYTES,
            allow_git_writes: false,
            reserved: Arc::from([]),
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

    /// Lets `file_write` and `file_edit` change files under a `.git` directory
    /// (refused by default: hooks and config there run code).
    #[must_use]
    pub fn with_git_writes(mut self, allow: bool) -> Self {
        self.allow_git_writes = allow;
        self
    }

    /// Keeps the file tools out of `dirs` (directories or files) even where they lie inside
    /// the root: a host passes the paths of its database and secrets, so that a misplaced data
    /// directory is still out of a model's reach. Each is resolved (symlinks followed) when it
    /// exists; paths outside the root, and the root itself, are ignored.
    #[must_use]
    pub fn with_reserved(mut self, dirs: impl IntoIterator<Item = PathBuf>) -> Self {
        let mut all: Vec<PathBuf> = self.reserved.iter().cloned().collect();
        all.extend(
            dirs.into_iter()
                .map(|d| d.canonicalize().unwrap_or(d))
                // Reserving the root itself would switch every file tool off: a host that
                // keeps its data there is refused at start-up instead.
                .filter(|d| d.starts_with(&self.root) && *d != self.root),
        );
        self.reserved = all.into();
        self
    }

    /// Whether `resolved` (a canonical path) lies in a reserved directory.
    pub fn is_reserved(&self, resolved: &Path) -> bool {
        self.reserved.iter().any(|d| resolved.starts_with(d))
    }

    /// Whether writes under `.git` are allowed; see [`Workspace::with_git_writes`].
    pub fn allows_git_writes(&self) -> bool {
        self.allow_git_writes
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
        if let Some(area) = self.reserved.iter().find(|d| resolved.starts_with(d)) {
            Err(WorkspaceError::Reserved {
                path: path.to_owned(),
                area: area.clone(),
            })
        } else if resolved.starts_with(&self.root) {
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

/// Opening, creating and replacing files strictly beneath the root.
///
/// [`Workspace::resolve`] gives a canonical path for messages and checks; the
/// file itself is then opened with `openat2(root_fd, relative, RESOLVE_BENEATH |
/// RESOLVE_NO_SYMLINKS)`, so a path component swapped for a symlink (or a
/// directory moved) between the check and the open makes the open fail instead
/// of leading outside. Nothing is opened by an absolute path.
impl Workspace {
    /// The part of a resolved path below the root (`.` for the root itself).
    fn below_root<'p>(&self, resolved: &'p Path) -> io::Result<&'p Path> {
        let rel = resolved.strip_prefix(&self.root).map_err(|_| {
            io::Error::new(
                io::ErrorKind::PermissionDenied,
                format!("{} is outside the workspace root", resolved.display()),
            )
        })?;
        Ok(if rel.as_os_str().is_empty() {
            Path::new(".")
        } else {
            rel
        })
    }

    fn open_rel(&self, rel: &Path, flags: OFlags, mode: Mode) -> io::Result<OwnedFd> {
        // openat2 refuses O_PATH with any flag but O_DIRECTORY, O_NOFOLLOW, O_CLOEXEC.
        let extra = if flags.contains(OFlags::PATH) {
            OFlags::CLOEXEC
        } else {
            OFlags::CLOEXEC | OFlags::NOCTTY
        };
        rustix::fs::openat2(
            self.root_fd.as_ref(),
            rel,
            flags | extra,
            mode,
            ResolveFlags::BENEATH | ResolveFlags::NO_SYMLINKS | ResolveFlags::NO_MAGICLINKS,
        )
        .map_err(|e| {
            if e == rustix::io::Errno::LOOP || e == rustix::io::Errno::XDEV {
                io::Error::new(
                    io::ErrorKind::PermissionDenied,
                    format!(
                        "{} changed while being opened (a symlink or a move on the way)",
                        rel.display()
                    ),
                )
            } else {
                e.into()
            }
        })
    }

    /// Opens an already resolved path for reading, beneath the root.
    ///
    /// Opens non-blocking, so a FIFO does not hang the call (the caller checks
    /// the file type on the descriptor).
    pub(crate) fn open_read(&self, resolved: &Path) -> io::Result<std::fs::File> {
        let rel = self.below_root(resolved)?;
        let fd = self.open_rel(rel, OFlags::RDONLY | OFlags::NONBLOCK, Mode::empty())?;
        Ok(std::fs::File::from(fd))
    }

    /// Opens an already resolved directory for listing, beneath the root.
    pub(crate) fn open_dir(&self, resolved: &Path) -> io::Result<OwnedFd> {
        let rel = self.below_root(resolved)?;
        self.open_rel(rel, OFlags::RDONLY | OFlags::DIRECTORY, Mode::empty())
    }

    /// Whether a resolved path lies under a `.git` directory of the workspace.
    pub(crate) fn is_in_git_dir(&self, resolved: &Path) -> bool {
        resolved.strip_prefix(&self.root).is_ok_and(|rel| {
            rel.components()
                .any(|c| matches!(c, Component::Normal(name) if name.eq_ignore_ascii_case(".git")))
        })
    }

    /// Replaces (or creates) the file at a resolved path atomically, beneath the root:
    /// missing directories are made one at a time, the bytes go to a new file with
    /// an unpredictable name in the same directory, which is then renamed over the
    /// target. The target's permissions are kept.
    pub(crate) fn write_atomic(&self, resolved: &Path, bytes: &[u8]) -> io::Result<()> {
        use std::io::Write as _;
        let rel = self.below_root(resolved)?;
        let (Some(parent), Some(name)) = (rel.parent(), rel.file_name()) else {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "the workspace root itself cannot be written as a file",
            ));
        };
        let dir = self.make_dirs(parent)?;
        let previous = rustix::fs::statat(&dir, name, AtFlags::SYMLINK_NOFOLLOW).ok();
        let (tmp_name, fd) = create_unique(&dir)?;
        let result = (|| {
            let mut file = std::fs::File::from(fd);
            file.write_all(bytes)?;
            if let Some(st) = previous
                && rustix::fs::FileType::from_raw_mode(st.st_mode).is_file()
            {
                rustix::fs::fchmod(&file, Mode::from_raw_mode(st.st_mode & 0o7777))?;
            }
            file.sync_all()?;
            rustix::fs::renameat(&dir, &tmp_name, &dir, name)?;
            Ok(())
        })();
        if result.is_err() {
            let _ = rustix::fs::unlinkat(&dir, &tmp_name, AtFlags::empty());
        }
        result
    }

    /// Opens (creating as needed) the directory `rel` below the root, one component at a time.
    fn make_dirs(&self, rel: &Path) -> io::Result<OwnedFd> {
        let flags = OFlags::PATH | OFlags::DIRECTORY;
        let mut dir = self.open_rel(Path::new("."), flags, Mode::empty())?;
        for part in rel.components() {
            let name: &OsStr = match part {
                Component::Normal(name) => name,
                Component::CurDir => continue,
                _ => {
                    return Err(io::Error::new(
                        io::ErrorKind::PermissionDenied,
                        format!("{} is not a plain relative path", rel.display()),
                    ));
                }
            };
            match rustix::fs::mkdirat(&dir, name, Mode::from_raw_mode(0o777)) {
                Ok(()) | Err(rustix::io::Errno::EXIST) => {}
                Err(e) => return Err(e.into()),
            }
            dir = rustix::fs::openat2(
                &dir,
                name,
                flags | OFlags::CLOEXEC,
                Mode::empty(),
                ResolveFlags::BENEATH | ResolveFlags::NO_SYMLINKS | ResolveFlags::NO_MAGICLINKS,
            )
            .map_err(io::Error::from)?;
        }
        Ok(dir)
    }
}

/// Creates a new file with an unpredictable name in `dir` (never following a symlink).
fn create_unique(dir: &OwnedFd) -> io::Result<(String, OwnedFd)> {
    use std::hash::{BuildHasher, Hasher};
    let mut last = None;
    for attempt in 0u32..16 {
        let mut h = std::collections::hash_map::RandomState::new().build_hasher();
        h.write_u32(attempt);
        h.write_u128(
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_nanos())
                .unwrap_or(0),
        );
        let name = format!(".toolbelt-write-{:016x}", h.finish());
        match rustix::fs::openat(
            dir,
            name.as_str(),
            OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC,
            Mode::from_raw_mode(0o666),
        ) {
            Ok(fd) => return Ok((name, fd)),
            Err(rustix::io::Errno::EXIST) => last = Some(rustix::io::Errno::EXIST),
            Err(e) => return Err(e.into()),
        }
    }
    Err(last.unwrap_or(rustix::io::Errno::EXIST).into())
}

#[cfg(test)]
mod tests;
