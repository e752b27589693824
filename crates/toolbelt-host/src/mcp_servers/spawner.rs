//! Spawners of stdio MCP servers: every one runs in the command sandbox (ADR 0060), over a
//! workspace, with the paths the host's settings make readable or writable.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::Arc;

use toolbelt_mcp::{SpawnRefused, StdioCommand, StdioProcess, StdioSpawner};
use toolbelt_tools::sandbox::{Sandbox, SandboxError, SandboxMode, SandboxPolicy};

/// Starts stdio MCP servers in the command sandbox (ADR 0060): Landlock, capabilities dropped,
/// namespaces where available, in `mode` (workspace-write by default: read-write in the
/// workspace `root`); readable: the system paths, `PATH`, the program's directory and
/// `read_paths`; writable besides: a private scratch directory (`TMPDIR`) and a private
/// `HOME`, both deleted when the process ends. The network is allowed (servers started
/// with `npx` or `uvx` download their package; many call APIs). The environment is empty but
/// `PATH`, `LANG`, `LC_ALL`, `TZ`, `HOME`, `TMPDIR` and the server's own `env`.
///
/// When the kernel cannot enforce the sandbox (no Landlock) and `mode` is not `full-access`,
/// the server is refused for good, its status saying why.
pub fn sandboxed_spawner(
    root: PathBuf,
    mode: SandboxMode,
    read_paths: Vec<PathBuf>,
) -> StdioSpawner {
    sandboxed_spawner_writing(root, mode, read_paths, Vec::new())
}

/// [`sandboxed_spawner`] with `write_paths` writable besides the workspace (ignored in
/// `read-only` mode).
pub fn sandboxed_spawner_writing(
    root: PathBuf,
    mode: SandboxMode,
    read_paths: Vec<PathBuf>,
    write_paths: Vec<PathBuf>,
) -> StdioSpawner {
    let paths = Arc::new((read_paths, write_paths));
    Arc::new(move |spec: StdioCommand| {
        let root = root.clone();
        let paths = paths.clone();
        Box::pin(async move { spawn_sandboxed(&root, mode, &paths.0, &paths.1, spec).await })
    })
}

/// The spawner of one entry of a host's own `--mcp-config` file (the CLI's `run`, `tools`,
/// `route` and `mcp serve`): the command sandbox over `root`, in the entry's `sandbox.mode`
/// (`workspace-write` when absent), its `readPaths` and `TOOLBELT_MCP_READ_PATHS` readable,
/// its `writePaths` writable.
///
/// # Errors
/// The entry's `sandbox.mode` is not one of `read-only`, `workspace-write`, `full-access`.
pub fn config_spawner(
    root: &Path,
    sandbox: Option<&toolbelt_mcp::McpSandbox>,
) -> Result<StdioSpawner, String> {
    let mode = match sandbox.and_then(|s| s.mode.as_deref()) {
        None => SandboxMode::WorkspaceWrite,
        Some(mode) => mode.parse().map_err(|_| {
            format!(
                "sandbox.mode: `{mode}` is not a sandbox mode (read-only, workspace-write, \
                 full-access)"
            )
        })?,
    };
    Ok(host_spawner(root, mode, sandbox))
}

/// The spawner of a process of the host's own (the CLI's): the sandbox over `root`
/// (canonicalised), `TOOLBELT_MCP_READ_PATHS` and `sandbox`'s paths.
fn host_spawner(
    root: &Path,
    mode: SandboxMode,
    sandbox: Option<&toolbelt_mcp::McpSandbox>,
) -> StdioSpawner {
    let root = std::fs::canonicalize(root).unwrap_or_else(|_| root.to_path_buf());
    let mut read_paths = env_read_paths();
    let mut write_paths = Vec::new();
    if let Some(sandbox) = sandbox {
        read_paths.extend(sandbox.read_paths.iter().cloned());
        write_paths.extend(sandbox.write_paths.iter().cloned());
    }
    sandboxed_spawner_writing(root, mode, read_paths, write_paths)
}

/// `TOOLBELT_MCP_READ_PATHS`, split like `PATH`.
fn env_read_paths() -> Vec<PathBuf> {
    std::env::var_os("TOOLBELT_MCP_READ_PATHS")
        .map(|paths| {
            std::env::split_paths(&paths)
                .filter(|p| !p.as_os_str().is_empty())
                .collect()
        })
        .unwrap_or_default()
}

/// The spawner of the CLI's connections to stored servers (`toolbelt mcp ls --check`): the
/// current directory as the workspace (workspace-write), `TOOLBELT_MCP_READ_PATHS` readable.
pub fn cli_spawner() -> StdioSpawner {
    host_spawner(Path::new("."), SandboxMode::WorkspaceWrite, None)
}

async fn spawn_sandboxed(
    root: &Path,
    mode: SandboxMode,
    read_paths: &[PathBuf],
    write_paths: &[PathBuf],
    spec: StdioCommand,
) -> Result<StdioProcess, SpawnRefused> {
    let home = tempfile::Builder::new()
        .prefix("toolbelt-mcp-home-")
        .tempdir()
        .map_err(|e| SpawnRefused::transient(format!("cannot create the server's HOME: {e}")))?;
    let mut policy = SandboxPolicy::new()
        .with_mode(mode)
        .with_network(true)
        .with_write_path(home.path());
    if let Some(dir) = program_dir(&spec.command) {
        policy = policy.with_read_path(dir);
    }
    for path in read_paths {
        policy = policy.with_read_path(path);
    }
    for path in write_paths {
        policy = policy.with_write_path(path);
    }
    let sandbox = Sandbox::new(root, policy);
    if let Some((uid, gid)) = sandbox.run_as() {
        // The server runs as the workspace's owner: its HOME is that user's to write.
        std::os::unix::fs::chown(home.path(), Some(uid), Some(gid)).map_err(|e| {
            SpawnRefused::transient(format!("cannot hand the server its HOME: {e}"))
        })?;
    }
    let mut argv = vec![spec.command.clone()];
    argv.extend(spec.args.iter().cloned());
    let mut cmd = sandbox
        .command(&argv)
        .map_err(|e| SpawnRefused::permanent(e.to_string()))?;
    for var in ["PATH", "LANG", "LC_ALL", "TZ"] {
        if let Some(value) = std::env::var_os(var) {
            cmd.env(var, value);
        }
    }
    cmd.env("HOME", home.path()).envs(&spec.env);
    if let Some(cwd) = &spec.cwd {
        cmd.current_dir(cwd);
    }
    cmd.stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .kill_on_drop(true);
    let mut child = sandbox.spawn(cmd).await.map_err(|e| match e {
        SandboxError::Spawn { program, source } => {
            SpawnRefused::permanent(format!("could not start `{program}`: {source}"))
        }
        SandboxError::Scratch(_) => SpawnRefused::transient(e.to_string()),
        other => SpawnRefused::permanent(format!("MCP server not started in the sandbox: {other}")),
    })?;
    let (Some(stdin), Some(stdout)) = (child.child.stdin.take(), child.child.stdout.take()) else {
        return Err(SpawnRefused::transient("the server's pipes are missing"));
    };
    Ok(StdioProcess::new(stdin, stdout, (child, home)))
}

/// The canonical directory of `command` (as a path, or found on `PATH`).
fn program_dir(command: &str) -> Option<PathBuf> {
    let found = if command.contains('/') {
        PathBuf::from(command)
    } else {
        let path = std::env::var_os("PATH")?;
        std::env::split_paths(&path)
            .map(|dir| dir.join(command))
            .find(|candidate| candidate.is_file())?
    };
    std::fs::canonicalize(found)
        .ok()?
        .parent()
        .map(Path::to_path_buf)
}
