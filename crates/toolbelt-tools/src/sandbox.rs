//! Confining the commands that `shell_exec` (and other command tools) start.
//!
//! A command runs under a [`SandboxPolicy`]:
//!
//! - **Landlock** (Linux ≥ 5.13; ABI 4+ for network rules, 6+ for signal and
//!   abstract-socket scoping): read and execute only in the system directories
//!   a shell needs ([`SYSTEM_READ_PATHS`], a short list of files in `/etc`,
//!   the directories on `PATH`), read (and in
//!   [`SandboxMode::WorkspaceWrite`] write) in the workspace root, read-write
//!   in a private scratch directory that becomes `TMPDIR` and is deleted after
//!   the run, and nothing else. Symlinks do not help: Landlock checks the file
//!   a path resolves to. TCP `bind`/`connect` are refused unless the policy
//!   allows the network. With the capabilities dropped (below), Landlock and
//!   the kernel's ptrace check refuse the command ptrace access, and so another
//!   process's `/proc/<pid>/environ` or memory, outside its own sandbox (a root
//!   command that kept its capabilities could read the server's, ADR 0050).
//! - **Capabilities**: `no_new_privs`, and the effective, permitted,
//!   inheritable and ambient sets emptied; the bounding set too when the
//!   process holds `CAP_SETPCAP` (a root server), so an `exec` as uid 0 gains
//!   nothing. A root server runs a confined command as the workspace's owner
//!   when that is another user ([`Sandbox::run_as`]); in a root-owned workspace
//!   the command runs as uid 0 without any capability, which keeps it writable
//!   in workspace-write mode (ADR 0050).
//! - **Seccomp**, unless the network is allowed: `socket(AF_UNIX, …)` and
//!   io_uring fail with `EACCES`, so no UNIX socket (the database's, Docker's,
//!   an ssh-agent's) is reachable; `socketpair` still works.
//! - **Namespaces** (when the process may create them, e.g. as root): a new PID
//!   namespace, so the command is PID 1 of its own namespace and killing it
//!   kills every process it started, including ones that called `setsid`;
//!   unless the network is allowed, a new network namespace with no interface
//!   up (no TCP, UDP or ICMP to anywhere, loopback included); and new mount,
//!   UTS and IPC namespaces: `/proc` is mounted again with
//!   `hidepid=ptraceable`, so it lists only the command's own processes (under
//!   their host PIDs), the hostname is `toolbelt-sandbox` and cannot change
//!   the host's, and the host's System V IPC objects are out of sight.
//!
//! No `unsafe` is needed: every one of these steps changes only the calling
//! *thread*, and a child inherits the thread that forked it, so each command is
//! spawned from a fresh short-lived thread that first unshares its namespaces,
//! mounts `/proc`, drops its capabilities and restricts itself, then forks. That
//! thread then ends; the rest of the process is never restricted.
//!
//! Where the kernel lacks Landlock, [`Sandbox::spawn`] refuses to run a command
//! in `read-only` or `workspace-write` mode ([`SandboxError::Unavailable`]);
//! only an explicit [`SandboxMode::FullAccess`] runs commands unconfined (a PID
//! namespace only). [`probe`] says what this machine offers, for a start-up
//! message.

use std::fmt;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use landlock::{
    ABI, Access, AccessFs, AccessNet, CompatLevel, Compatible, LandlockStatus, PathBeneath, PathFd,
    Ruleset, RulesetAttr, RulesetCreatedAttr, RulesetStatus, Scope,
};
use nix::sched::CloneFlags;
use tokio::process::{Child, Command};

mod isolate;

/// The newest Landlock ABI this code asks for; older kernels get what they support.
const TARGET_ABI: ABI = ABI::V10;

/// Directories a shell and common tools need to read and execute.
pub const SYSTEM_READ_PATHS: &[&str] = &[
    "/bin",
    "/sbin",
    "/usr",
    "/lib",
    "/lib32",
    "/lib64",
    "/libx32",
    "/opt",
    "/proc",
    "/etc/alternatives",
    "/etc/ld.so.cache",
    "/etc/ld.so.conf",
    "/etc/ld.so.conf.d",
    "/etc/passwd",
    "/etc/group",
    "/etc/nsswitch.conf",
    "/etc/localtime",
    "/etc/timezone",
    "/etc/hosts",
    "/etc/host.conf",
    "/etc/resolv.conf",
    "/etc/ssl/certs",
    "/etc/ssl/openssl.cnf",
    "/etc/ca-certificates",
    "/etc/gitconfig",
    "/etc/mime.types",
    "/etc/terminfo",
    "/etc/locale.alias",
    "/etc/inputrc",
    "/etc/profile",
    "/etc/bash.bashrc",
    "/usr/share/zoneinfo",
];

/// Device files a command may read and write.
pub const DEVICE_PATHS: &[&str] = &[
    "/dev/null",
    "/dev/zero",
    "/dev/full",
    "/dev/random",
    "/dev/urandom",
];

/// How much of the file system a command may touch.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[non_exhaustive]
pub enum SandboxMode {
    /// Read the workspace and the system paths; write nothing but the scratch directory.
    ReadOnly,
    /// As read-only, plus read-write inside the workspace root (the default).
    #[default]
    WorkspaceWrite,
    /// No confinement at all (an explicit choice of the host): the command can
    /// do anything the toolbelt process can. Kill-on-exit still applies.
    FullAccess,
}

impl SandboxMode {
    /// The name used in configuration: `read-only`, `workspace-write`, `full-access`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::ReadOnly => "read-only",
            Self::WorkspaceWrite => "workspace-write",
            Self::FullAccess => "full-access",
        }
    }
}

impl fmt::Display for SandboxMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::str::FromStr for SandboxMode {
    type Err = SandboxError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "read-only" => Ok(Self::ReadOnly),
            "workspace-write" => Ok(Self::WorkspaceWrite),
            "full-access" => Ok(Self::FullAccess),
            other => Err(SandboxError::UnknownMode(other.to_owned())),
        }
    }
}

/// What a sandboxed command may do.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct SandboxPolicy {
    /// File system mode (default [`SandboxMode::WorkspaceWrite`]).
    pub mode: SandboxMode,
    /// Whether the command may use the network (default `false`).
    pub allow_network: bool,
    /// Extra paths readable (and executable), e.g. a toolchain under `$HOME`.
    pub read_paths: Vec<PathBuf>,
    /// Extra paths readable and writable (ignored in read-only mode).
    pub write_paths: Vec<PathBuf>,
}

impl SandboxPolicy {
    /// The default: workspace-write, no network.
    pub fn new() -> Self {
        Self::default()
    }

    /// A policy with the given mode.
    pub fn with_mode(mut self, mode: SandboxMode) -> Self {
        self.mode = mode;
        self
    }

    /// Allows or denies the network.
    #[must_use]
    pub fn with_network(mut self, allow: bool) -> Self {
        self.allow_network = allow;
        self
    }

    /// Adds a readable path.
    #[must_use]
    pub fn with_read_path(mut self, path: impl Into<PathBuf>) -> Self {
        self.read_paths.push(path.into());
        self
    }

    /// Adds a writable path.
    #[must_use]
    pub fn with_write_path(mut self, path: impl Into<PathBuf>) -> Self {
        self.write_paths.push(path.into());
        self
    }
}

/// Why a command could not be started under its sandbox.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SandboxError {
    /// The kernel cannot enforce the policy and the mode is not `full-access`.
    #[error(
        "the command sandbox is unavailable ({reason}); commands are refused in `{mode}` mode. \
         A host that accepts unconfined commands sets the sandbox mode to `full-access` and \
         has every command approved"
    )]
    Unavailable {
        /// The mode that could not be enforced.
        mode: SandboxMode,
        /// What the kernel lacks.
        reason: String,
    },
    /// A mode name that is none of `read-only`, `workspace-write`, `full-access`.
    #[error("unknown sandbox mode {0:?}; expected one of read-only, workspace-write, full-access")]
    UnknownMode(String),
    /// Setting up the restrictions failed.
    #[error("could not set up the sandbox: {0}")]
    Setup(String),
    /// The scratch directory could not be created.
    #[error("could not create the sandbox scratch directory")]
    Scratch(#[source] io::Error),
    /// The program could not be started.
    #[error("could not start `{program}`")]
    Spawn {
        /// The program.
        program: String,
        /// What the OS said.
        #[source]
        source: io::Error,
    },
}

/// What this machine offers, probed once per process.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct SandboxSupport {
    /// The Landlock ABI the kernel supports, `None` when Landlock is missing or disabled.
    pub landlock_abi: Option<i32>,
    /// Whether new PID, network, mount, UTS and IPC namespaces can be created
    /// and `/proc` mounted again in them, listing only a command's own
    /// processes (needs `CAP_SYS_ADMIN`, e.g. a root server).
    pub namespaces: bool,
    /// Whether the bounding capability set can be emptied (needs `CAP_SETPCAP`);
    /// the other sets are emptied and `no_new_privs` set in any case.
    pub bounding_set_cleared: bool,
    /// Whether a seccomp filter can refuse `AF_UNIX` sockets when the network is off.
    pub unix_sockets_refused: bool,
}

impl SandboxSupport {
    /// Whether file system confinement works here.
    pub fn landlock(&self) -> bool {
        self.landlock_abi.is_some()
    }

    /// Whether Landlock can refuse TCP bind and connect (ABI ≥ 4).
    pub fn landlock_network(&self) -> bool {
        self.landlock_abi.is_some_and(|abi| abi >= 4)
    }

    /// A one-line summary for a start-up message.
    pub fn summary(&self) -> String {
        let fs = match self.landlock_abi {
            Some(abi) => format!("Landlock ABI {abi}: commands confined to the workspace"),
            None => "NO Landlock on this kernel: commands cannot be confined; every command \
                     is refused unless the sandbox mode is full-access (then approve each one)"
                .to_owned(),
        };
        let ns = if self.namespaces {
            "PID, network, mount, UTS and IPC namespaces: kill reaches every descendant, \
             network isolated, /proc lists the command's own processes only, hostname and \
             System V IPC private"
        } else if self.landlock_network() {
            "no namespaces: process-group kill only (setsid escapes it); TCP refused by Landlock, UDP not"
        } else {
            "no namespaces: process-group kill only (setsid escapes it); network NOT isolated"
        };
        let caps = if self.bounding_set_cleared {
            "every capability dropped, bounding set included, no_new_privs"
        } else {
            "capabilities dropped but the bounding set kept (no CAP_SETPCAP), no_new_privs"
        };
        let unix = if self.unix_sockets_refused {
            "AF_UNIX sockets refused by seccomp when the network is off"
        } else {
            "NO seccomp: AF_UNIX sockets outside the workspace reachable"
        };
        format!("sandbox: {fs}; {ns}; {caps}; {unix}")
    }
}

/// Who a command in a sandbox runs as ([`command_user`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum CommandUser {
    /// The server's own user: a non-root server, or `full-access` mode.
    Server,
    /// A root server's confined command in a workspace another user owns: that user's ids,
    /// so the command has that user's rights and no more.
    Owner {
        /// The workspace owner's uid.
        uid: u32,
        /// The workspace owner's gid.
        gid: u32,
    },
    /// A root server's confined command in a root-owned workspace: uid 0 with no capability
    /// (ADR 0050), because an unprivileged user could not write that workspace.
    RootWithoutCapabilities,
}

/// Who a command confined in `mode` over the workspace `root` runs as.
pub fn command_user(root: &Path, mode: SandboxMode) -> CommandUser {
    use std::os::unix::fs::MetadataExt;
    if mode == SandboxMode::FullAccess || !nix::unistd::geteuid().is_root() {
        return CommandUser::Server;
    }
    match std::fs::metadata(root) {
        Ok(owner) if owner.uid() != 0 => CommandUser::Owner {
            uid: owner.uid(),
            gid: owner.gid(),
        },
        _ => CommandUser::RootWithoutCapabilities,
    }
}

/// Probes Landlock and namespaces once (in throwaway threads) and caches the answer.
pub fn probe() -> &'static SandboxSupport {
    static SUPPORT: OnceLock<SandboxSupport> = OnceLock::new();
    SUPPORT.get_or_init(|| {
        let landlock_abi = std::thread::spawn(|| {
            let status = Ruleset::default()
                .handle_access(AccessFs::Execute)
                .and_then(|r| r.create())
                .and_then(|r| r.restrict_self())
                .ok()?;
            match status.landlock {
                LandlockStatus::Available {
                    effective_abi,
                    kernel_abi,
                } => Some(kernel_abi.unwrap_or(effective_abi as i32)),
                LandlockStatus::NotEnabled | LandlockStatus::NotImplemented => None,
            }
        })
        .join()
        .ok()
        .flatten();
        // Everything but Landlock, tried in the order `spawn` uses.
        let (namespaces, bounding_set_cleared, unix_sockets_refused) = std::thread::spawn(|| {
            let namespaces = isolate::enter(isolate::confined_flags(false)).is_ok()
                && isolate::private_proc().is_ok()
                && isolate::set_hostname().is_ok();
            let bounding = isolate::drop_capabilities(false).unwrap_or(false);
            let unix = isolate::refuse_unix_sockets().is_ok();
            (namespaces, bounding, unix)
        })
        .join()
        .unwrap_or((false, false, false));
        let support = SandboxSupport {
            landlock_abi,
            namespaces,
            bounding_set_cleared,
            unix_sockets_refused,
        };
        if support.landlock_abi.is_none() {
            tracing::warn!("{}", support.summary());
        } else {
            tracing::info!("{}", support.summary());
        }
        support
    })
}

/// A command confined to one workspace root under one policy.
#[derive(Debug, Clone)]
pub struct Sandbox {
    root: PathBuf,
    policy: SandboxPolicy,
}

/// A running sandboxed process and the scratch directory it uses (deleted on drop).
#[derive(Debug)]
pub struct SandboxedChild {
    /// The process (PID 1 of its own PID namespace when namespaces are available).
    pub child: Child,
    /// How it was confined.
    pub confinement: Confinement,
    /// The scratch directory (`TMPDIR`), deleted when dropped.
    pub scratch: tempfile::TempDir,
}

/// How a process was actually confined.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct Confinement {
    /// Landlock file system rules are in force.
    pub landlock: bool,
    /// Landlock TCP rules are in force.
    pub landlock_network: bool,
    /// In its own PID namespace (a kill reaches every descendant).
    pub pid_namespace: bool,
    /// In its own, empty network namespace.
    pub network_namespace: bool,
    /// In its own mount, UTS and IPC namespaces, with a `/proc` that lists
    /// only its own processes.
    pub mount_uts_ipc_namespaces: bool,
    /// Its effective, permitted, inheritable and ambient capability sets are
    /// empty and `no_new_privs` is set.
    pub capabilities_dropped: bool,
    /// Its bounding capability set is empty too.
    pub bounding_set_cleared: bool,
    /// A seccomp filter refuses its `AF_UNIX` sockets (and io_uring).
    pub unix_sockets_refused: bool,
    /// The user it runs as when that is not the server's: a root server runs a confined
    /// command as the owner of the workspace when that is another user
    /// ([`Sandbox::run_as`]).
    pub uid: Option<u32>,
}

impl Sandbox {
    /// A sandbox for commands working in `root` (which should be canonical).
    pub fn new(root: impl Into<PathBuf>, policy: SandboxPolicy) -> Self {
        Self {
            root: root.into(),
            policy,
        }
    }

    /// The policy.
    pub fn policy(&self) -> &SandboxPolicy {
        &self.policy
    }

    /// The workspace root.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The user and group a confined command runs as, when not the server's
    /// ([`command_user`] for this sandbox's root and mode).
    pub fn run_as(&self) -> Option<(u32, u32)> {
        match command_user(&self.root, self.policy.mode) {
            CommandUser::Owner { uid, gid } => Some((uid, gid)),
            CommandUser::Server | CommandUser::RootWithoutCapabilities => None,
        }
    }

    /// A command for `argv[0]` with `argv[1..]`, its working directory at the root,
    /// and an empty environment (add what it needs), ready for [`Sandbox::spawn`].
    ///
    /// # Errors
    /// [`SandboxError::Setup`] when `argv` is empty.
    pub fn command<S: AsRef<std::ffi::OsStr>>(&self, argv: &[S]) -> Result<Command, SandboxError> {
        let (program, args) = argv
            .split_first()
            .ok_or_else(|| SandboxError::Setup("empty argv".to_owned()))?;
        let mut cmd = Command::new(program);
        cmd.args(args).current_dir(&self.root).env_clear();
        Ok(cmd)
    }

    /// Starts `cmd` under the policy (its own process group, in a fresh thread
    /// that unshares namespaces and restricts itself with Landlock before forking).
    ///
    /// `TMPDIR` is set to a private scratch directory (mode 0700) that lives as
    /// long as the returned [`SandboxedChild`].
    ///
    /// # Errors
    /// [`SandboxError::Unavailable`] when the policy needs Landlock and the
    /// kernel lacks it; [`SandboxError::Spawn`] when the program cannot start.
    pub async fn spawn(&self, mut cmd: Command) -> Result<SandboxedChild, SandboxError> {
        let support = probe();
        let confine = self.policy.mode != SandboxMode::FullAccess;
        if confine && !support.landlock() {
            return Err(SandboxError::Unavailable {
                mode: self.policy.mode,
                reason: "the kernel has no Landlock".to_owned(),
            });
        }
        let scratch = tempfile::Builder::new()
            .prefix("toolbelt-sandbox-")
            .tempdir()
            .map_err(SandboxError::Scratch)?;
        cmd.env("TMPDIR", scratch.path());
        let run_as = self.run_as();
        if let Some((uid, gid)) = run_as {
            // The scratch directory is the command's: created by the server, given to its user.
            std::os::unix::fs::chown(scratch.path(), Some(uid), Some(gid))
                .map_err(SandboxError::Scratch)?;
            cmd.uid(uid).gid(gid);
        }
        let plan = Plan {
            root: self.root.clone(),
            scratch: scratch.path().to_path_buf(),
            policy: self.policy.clone(),
            confine,
            namespaces: support.namespaces,
            run_as: run_as.map(|(uid, _)| uid),
        };
        let program = cmd.as_std().get_program().to_string_lossy().into_owned();
        let handle = tokio::runtime::Handle::current();
        let (tx, rx) = tokio::sync::oneshot::channel();
        std::thread::Builder::new()
            .name("toolbelt-sandbox-spawn".to_owned())
            .spawn(move || {
                let _runtime = handle.enter();
                let _ = tx.send(plan.spawn_here(cmd));
            })
            .map_err(|e| SandboxError::Setup(format!("cannot start the spawning thread: {e}")))?;
        let (child, confinement) = rx
            .await
            .map_err(|_| SandboxError::Setup("the spawning thread died".to_owned()))?
            .map_err(|e| match e {
                SpawnFailure::Setup(msg) => SandboxError::Setup(msg),
                SpawnFailure::Spawn(source) => SandboxError::Spawn { program, source },
            })?;
        Ok(SandboxedChild {
            child,
            confinement,
            scratch,
        })
    }
}

enum SpawnFailure {
    Setup(String),
    Spawn(io::Error),
}

struct Plan {
    root: PathBuf,
    scratch: PathBuf,
    policy: SandboxPolicy,
    confine: bool,
    namespaces: bool,
    run_as: Option<u32>,
}

impl Plan {
    /// Runs in a dedicated thread: everything done here affects only this thread and the child.
    fn spawn_here(self, mut cmd: Command) -> Result<(Child, Confinement), SpawnFailure> {
        let mut confinement = Confinement {
            landlock: false,
            landlock_network: false,
            pid_namespace: false,
            network_namespace: false,
            mount_uts_ipc_namespaces: false,
            capabilities_dropped: false,
            bounding_set_cleared: false,
            unix_sockets_refused: false,
            uid: self.run_as,
        };
        if self.namespaces {
            let flags = if self.confine {
                isolate::confined_flags(self.policy.allow_network)
            } else {
                CloneFlags::CLONE_NEWPID
            };
            isolate::enter(flags).map_err(SpawnFailure::Setup)?;
            confinement.pid_namespace = true;
            confinement.network_namespace = flags.contains(CloneFlags::CLONE_NEWNET);
            if self.confine {
                // Mounting needs the capabilities dropped below, and Landlock refuses it.
                isolate::private_proc().map_err(SpawnFailure::Setup)?;
                isolate::set_hostname().map_err(SpawnFailure::Setup)?;
                confinement.mount_uts_ipc_namespaces = true;
            }
        }
        if self.confine {
            confinement.bounding_set_cleared =
                isolate::drop_capabilities(self.run_as.is_some()).map_err(SpawnFailure::Setup)?;
            confinement.capabilities_dropped = true;
            // Without seccomp (an architecture `seccompiler` lacks) the start-up line says so.
            if !self.policy.allow_network && probe().unix_sockets_refused {
                isolate::refuse_unix_sockets().map_err(SpawnFailure::Setup)?;
                confinement.unix_sockets_refused = true;
            }
            let (fs, net) = self.restrict().map_err(SpawnFailure::Setup)?;
            confinement.landlock = fs;
            confinement.landlock_network = net;
        }
        cmd.process_group(0);
        let child = cmd.spawn().map_err(SpawnFailure::Spawn)?;
        Ok((child, confinement))
    }

    /// Restricts the calling thread; returns whether file and network rules are enforced.
    fn restrict(&self) -> Result<(bool, bool), String> {
        let read = AccessFs::from_read(TARGET_ABI);
        let all = AccessFs::from_all(TARGET_ABI);
        let device = AccessFs::ReadFile | AccessFs::WriteFile;
        let workspace = match self.policy.mode {
            SandboxMode::ReadOnly => read,
            SandboxMode::WorkspaceWrite | SandboxMode::FullAccess => all,
        };
        let err = |e: landlock::RulesetError| e.to_string();
        let mut ruleset = Ruleset::default()
            .set_compatibility(CompatLevel::BestEffort)
            .handle_access(all)
            .map_err(err)?
            .scope(Scope::from_all(TARGET_ABI))
            .map_err(err)?;
        if !self.policy.allow_network && probe().landlock_network() {
            ruleset = ruleset
                .handle_access(AccessNet::from_all(TARGET_ABI))
                .map_err(err)?;
        }
        let mut created = ruleset.create().map_err(err)?;
        let path_dirs: Vec<PathBuf> = std::env::var_os("PATH")
            .map(|p| std::env::split_paths(&p).collect())
            .unwrap_or_default();
        let mut rules: Vec<(PathBuf, landlock::BitFlags<AccessFs>)> = Vec::new();
        rules.extend(SYSTEM_READ_PATHS.iter().map(|p| (PathBuf::from(p), read)));
        rules.extend(path_dirs.into_iter().map(|p| (p, read)));
        rules.extend(self.policy.read_paths.iter().map(|p| (p.clone(), read)));
        rules.extend(DEVICE_PATHS.iter().map(|p| (PathBuf::from(p), device)));
        rules.push((self.root.clone(), workspace));
        rules.push((self.scratch.clone(), all));
        if self.policy.mode != SandboxMode::ReadOnly {
            rules.extend(self.policy.write_paths.iter().map(|p| (p.clone(), all)));
        }
        for (path, access) in rules {
            // Paths missing on this machine are skipped; the rest must be added.
            let Ok(fd) = PathFd::new(&path) else { continue };
            let access = if path.is_dir() {
                access
            } else {
                access & AccessFs::from_file(TARGET_ABI)
            };
            created = created
                .add_rule(PathBeneath::new(fd, access))
                .map_err(|e| format!("{}: {e}", path.display()))?;
        }
        let status = created.restrict_self().map_err(err)?;
        match status.ruleset {
            RulesetStatus::NotEnforced => Err("Landlock rules were not enforced".to_owned()),
            RulesetStatus::FullyEnforced | RulesetStatus::PartiallyEnforced => Ok((
                true,
                !self.policy.allow_network && probe().landlock_network(),
            )),
        }
    }
}
