//! The steps the spawning thread takes, besides Landlock, before it forks a
//! confined command: namespaces, a private `/proc`, an empty capability set and
//! a seccomp filter. Each one changes only the calling thread (and so the child
//! it forks); the probe runs them in a throwaway thread to learn what works.

use std::collections::BTreeMap;

use caps::{CapSet, Capability};
use nix::libc;
use nix::mount::{MsFlags, mount};
use nix::sched::{CloneFlags, unshare};
use seccompiler::{
    BpfProgram, SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter,
    SeccompRule, TargetArch,
};

/// The hostname a command sees in its own UTS namespace.
pub(super) const HOSTNAME: &str = "toolbelt-sandbox";

/// The namespaces of a confined command: PID, mount, UTS, IPC and, when the
/// network is off, network.
pub(super) fn confined_flags(network: bool) -> CloneFlags {
    let mut flags = CloneFlags::CLONE_NEWPID
        | CloneFlags::CLONE_NEWNS
        | CloneFlags::CLONE_NEWUTS
        | CloneFlags::CLONE_NEWIPC;
    if !network {
        flags |= CloneFlags::CLONE_NEWNET;
    }
    flags
}

/// Unshares `flags` for the calling thread.
pub(super) fn enter(flags: CloneFlags) -> Result<(), String> {
    unshare(flags).map_err(|e| format!("unshare({flags:?}) failed: {e}"))
}

/// In the thread's new mount namespace, keeps mounts from propagating to the
/// host and mounts a procfs with `hidepid=ptraceable` over `/proc`: it lists only the
/// processes the reader may ptrace, which for a command with no capabilities
/// under Landlock's ptrace scoping are its own.
///
/// The procfs shows the thread's PID namespace (the host's), not the command's:
/// `pidns=` (Linux 6.15) could name the command's namespace, but the kernel
/// refuses to open that namespace before its first process exists, and that
/// first process is the command (see ADR 0050).
pub(super) fn private_proc() -> Result<(), String> {
    mount(
        None::<&str>,
        "/",
        None::<&str>,
        MsFlags::MS_REC | MsFlags::MS_PRIVATE,
        None::<&str>,
    )
    .map_err(|e| format!("making the mount namespace private failed: {e}"))?;
    let flags = MsFlags::MS_NOSUID | MsFlags::MS_NODEV | MsFlags::MS_NOEXEC;
    mount(
        Some("proc"),
        "/proc",
        Some("proc"),
        flags,
        Some("hidepid=ptraceable"),
    )
    .map_err(|e| format!("mounting /proc failed: {e}"))
}

/// Names the thread's own UTS namespace, so a command's `hostname` says where it runs.
pub(super) fn set_hostname() -> Result<(), String> {
    nix::unistd::sethostname(HOSTNAME).map_err(|e| format!("sethostname failed: {e}"))
}

/// Sets `no_new_privs` and empties every capability set of the thread: the
/// bounding set (while `CAP_SETPCAP` still allows it), ambient, inheritable,
/// effective and permitted. Returns whether the bounding set is now empty
/// (a server without `CAP_SETPCAP` cannot lower it; `no_new_privs` then keeps
/// an exec from gaining what it holds).
///
/// With `switch_uid` (a root server about to run the command as another user), the
/// effective and permitted sets keep `CAP_SETUID` and `CAP_SETGID` only: the child uses them
/// to take that user's ids before `exec`, and the kernel clears both sets when a root process
/// becomes a non-root user, so the command starts with none.
pub(super) fn drop_capabilities(switch_uid: bool) -> Result<bool, String> {
    nix::sys::prctl::set_no_new_privs().map_err(|e| format!("no_new_privs failed: {e}"))?;
    fn err(what: &'static str) -> impl Fn(caps::errors::CapsError) -> String {
        move |e| format!("clearing {what}: {e}")
    }
    if caps::has_cap(None, CapSet::Effective, Capability::CAP_SETPCAP).unwrap_or(false) {
        caps::clear(None, CapSet::Bounding).map_err(err("the bounding set"))?;
    }
    caps::clear(None, CapSet::Ambient).map_err(err("the ambient set"))?;
    caps::clear(None, CapSet::Inheritable).map_err(err("the inheritable set"))?;
    if switch_uid {
        let keep: caps::CapsHashSet = [Capability::CAP_SETUID, Capability::CAP_SETGID].into();
        // The effective set must stay within the permitted one: lowered first.
        caps::set(None, CapSet::Effective, &keep).map_err(err("the effective set"))?;
        caps::set(None, CapSet::Permitted, &keep).map_err(err("the permitted set"))?;
    } else {
        caps::clear(None, CapSet::Effective).map_err(err("the effective set"))?;
        caps::clear(None, CapSet::Permitted).map_err(err("the permitted set"))?;
    }
    let bounding = caps::read(None, CapSet::Bounding).map_err(err("the bounding set"))?;
    Ok(bounding.is_empty())
}

/// Installs a seccomp filter on the thread that makes `socket(AF_UNIX, …)` and
/// io_uring (which can open sockets without the `socket` system call) fail
/// with `EACCES`. `socketpair` stays allowed: it reaches no one.
pub(super) fn refuse_unix_sockets() -> Result<(), String> {
    let arch = TargetArch::try_from(std::env::consts::ARCH).map_err(err)?;
    let unix = SeccompCondition::new(
        0,
        SeccompCmpArgLen::Dword,
        SeccompCmpOp::Eq,
        libc::AF_UNIX as u64,
    )
    .map_err(err)?;
    let mut rules: BTreeMap<i64, Vec<SeccompRule>> = BTreeMap::new();
    for nr in with_x32(libc::SYS_socket) {
        rules.insert(nr, vec![SeccompRule::new(vec![unix.clone()]).map_err(err)?]);
    }
    for call in [
        libc::SYS_io_uring_setup,
        libc::SYS_io_uring_enter,
        libc::SYS_io_uring_register,
    ] {
        for nr in with_x32(call) {
            rules.insert(nr, Vec::new());
        }
    }
    let filter = SeccompFilter::new(
        rules,
        SeccompAction::Allow,
        SeccompAction::Errno(libc::EACCES as u32),
        arch,
    )
    .map_err(err)?;
    let program: BpfProgram = filter.try_into().map_err(err)?;
    seccompiler::apply_filter(&program).map_err(err)
}

fn err(e: impl std::fmt::Display) -> String {
    format!("seccomp: {e}")
}

/// A system call's number, and on x86-64 also its x32 number (same audit
/// architecture, so the filter's architecture check lets it through).
fn with_x32(nr: i64) -> Vec<i64> {
    if cfg!(target_arch = "x86_64") {
        vec![nr, nr | 0x4000_0000]
    } else {
        vec![nr]
    }
}
