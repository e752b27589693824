//! Running a child process in its own process group, with a deadline and capped output.
//!
//! Shared by `shell_exec` and `git`. The child is the leader of a new process
//! group; whatever happens (normal exit, timeout, cancellation, the future
//! being dropped by the executor's own timeout) the whole group is killed, so
//! `sh -c 'sleep 1000 & ...'` leaves nothing behind.

use std::collections::VecDeque;
use std::io;
use std::os::unix::process::ExitStatusExt;
use std::process::Stdio;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;
use tokio::io::{AsyncRead, AsyncReadExt};
use tokio::process::Command;
use tokio_util::sync::CancellationToken;

use crate::sandbox::Sandbox;

/// How long readers may keep draining pipes after the child exited and its
/// group was killed (a process that left the group may still hold them).
const DRAIN_GRACE: Duration = Duration::from_millis(500);

/// Limits of one run.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Limits {
    pub(crate) timeout: Duration,
    pub(crate) max_output_bytes: usize,
}

/// What a finished (or killed) process produced.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Finished {
    pub(crate) exit_code: Option<i32>,
    pub(crate) signal: Option<i32>,
    pub(crate) stdout: Captured,
    pub(crate) stderr: Captured,
}

/// One output stream, possibly cut in the middle.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Captured {
    pub(crate) text: String,
    pub(crate) total_bytes: u64,
    pub(crate) truncated: bool,
}

/// Why a run did not finish normally.
#[derive(Debug, thiserror::Error)]
pub(crate) enum RunError {
    #[error("could not start `{program}`")]
    Spawn {
        program: String,
        #[source]
        source: io::Error,
    },
    #[error("timed out after {}s; its process group was killed", .after.as_secs_f64())]
    TimedOut {
        after: Duration,
        partial: Box<Finished>,
    },
    #[error("cancelled; its process group was killed")]
    Cancelled,
    #[error(transparent)]
    Sandbox(crate::sandbox::SandboxError),
    #[error("waiting for the process failed")]
    Wait(#[source] io::Error),
}

/// Kills the process group when dropped, whichever way the run ends.
struct GroupGuard(Option<Pid>);

impl GroupGuard {
    fn kill(&self) {
        if let Some(pgid) = self.0 {
            // ESRCH (the group is already gone) is the normal case after a clean exit.
            if let Err(e) = killpg(pgid, Signal::SIGKILL)
                && e != nix::errno::Errno::ESRCH
            {
                tracing::warn!(pgid = pgid.as_raw(), error = %e, "could not kill process group");
            }
        }
    }
}

impl Drop for GroupGuard {
    fn drop(&mut self) {
        self.kill();
    }
}

/// Runs `cmd` to completion under `limits`, stopping early when `cancel` fires.
///
/// With a `sandbox`, the command is started under it (see [`crate::sandbox`]).
pub(crate) async fn run(
    mut cmd: Command,
    sandbox: Option<&Sandbox>,
    limits: Limits,
    cancel: &CancellationToken,
) -> Result<Finished, RunError> {
    let program = cmd.as_std().get_program().to_string_lossy().into_owned();
    cmd.process_group(0)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    // Holds the sandbox's scratch directory until the run ends.
    let mut _scratch = None;
    let mut child = match sandbox {
        None => cmd
            .spawn()
            .map_err(|source| RunError::Spawn { program, source })?,
        Some(sandbox) => {
            let spawned = sandbox.spawn(cmd).await.map_err(RunError::Sandbox)?;
            _scratch = Some(spawned.scratch);
            spawned.child
        }
    };
    let guard = GroupGuard(
        child
            .id()
            .and_then(|id| i32::try_from(id).ok())
            .map(Pid::from_raw),
    );
    let out = Arc::new(Mutex::new(CappedBuffer::new(limits.max_output_bytes)));
    let err = Arc::new(Mutex::new(CappedBuffer::new(limits.max_output_bytes)));
    let stdout = child.stdout.take();
    let stderr = child.stderr.take();
    let readers = async {
        tokio::join!(drain(stdout, &out), drain(stderr, &err));
    };
    let exited = CancellationToken::new();
    let work = async {
        let (status, ()) = tokio::join!(
            async {
                let status = child.wait().await;
                // Kill stragglers (background jobs) so the pipes they hold close.
                guard.kill();
                exited.cancel();
                status
            },
            async {
                // Readers normally end at EOF right after the group dies; the
                // grace only matters for a process that escaped the group.
                tokio::pin!(readers);
                tokio::select! {
                    () = &mut readers => {}
                    () = async {
                        exited.cancelled().await;
                        tokio::time::sleep(DRAIN_GRACE).await;
                    } => {}
                }
            }
        );
        status
    };
    let finished = |status: Option<std::process::ExitStatus>| Finished {
        exit_code: status.and_then(|s| s.code()),
        signal: status.and_then(|s| s.signal()),
        stdout: take(&out),
        stderr: take(&err),
    };
    tokio::select! {
        status = work => Ok(finished(Some(status.map_err(RunError::Wait)?))),
        () = tokio::time::sleep(limits.timeout) => {
            guard.kill();
            Err(RunError::TimedOut { after: limits.timeout, partial: Box::new(finished(None)) })
        }
        () = cancel.cancelled() => {
            guard.kill();
            Err(RunError::Cancelled)
        }
    }
}

async fn drain<R: AsyncRead + Unpin>(reader: Option<R>, into: &Mutex<CappedBuffer>) {
    let Some(mut reader) = reader else { return };
    let mut chunk = vec![0u8; 8192];
    loop {
        match reader.read(&mut chunk).await {
            Ok(0) | Err(_) => return,
            Ok(n) => into
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .push(&chunk[..n]),
        }
    }
}

fn take(buffer: &Mutex<CappedBuffer>) -> Captured {
    buffer
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .to_captured()
}

/// Keeps the first 3/4 and the last 1/4 of a stream within `cap` bytes, never
/// holding more, however much the process writes.
#[derive(Debug)]
pub(crate) struct CappedBuffer {
    head: Vec<u8>,
    tail: VecDeque<u8>,
    head_cap: usize,
    tail_cap: usize,
    total: u64,
}

impl CappedBuffer {
    pub(crate) fn new(cap: usize) -> Self {
        let head_cap = cap - cap / 4;
        Self {
            head: Vec::new(),
            tail: VecDeque::new(),
            head_cap,
            tail_cap: cap - head_cap,
            total: 0,
        }
    }

    pub(crate) fn push(&mut self, mut bytes: &[u8]) {
        self.total += bytes.len() as u64;
        let room = self.head_cap - self.head.len();
        if room > 0 {
            let n = room.min(bytes.len());
            self.head.extend_from_slice(&bytes[..n]);
            bytes = &bytes[n..];
        }
        if bytes.len() >= self.tail_cap {
            self.tail.clear();
            self.tail.extend(&bytes[bytes.len() - self.tail_cap..]);
        } else {
            self.tail.extend(bytes);
            let excess = self.tail.len().saturating_sub(self.tail_cap);
            self.tail.drain(..excess);
        }
    }

    pub(crate) fn to_captured(&self) -> Captured {
        let kept = (self.head.len() + self.tail.len()) as u64;
        let truncated = self.total > kept;
        let mut text = String::from_utf8_lossy(&self.head).into_owned();
        if truncated {
            text.push_str(&format!(
                "\n[... {} bytes truncated of {} ...]\n",
                self.total - kept,
                self.total
            ));
        }
        let (a, b) = self.tail.as_slices();
        let mut tail = a.to_vec();
        tail.extend_from_slice(b);
        text.push_str(&String::from_utf8_lossy(&tail));
        Captured {
            text,
            total_bytes: self.total,
            truncated,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn capped_buffer_keeps_head_and_tail_with_a_marker() {
        let mut buf = CappedBuffer::new(8);
        buf.push(b"abcdef");
        buf.push(b"ghijklmnop");
        let got = buf.to_captured();
        assert_eq!(got.text, "abcdef\n[... 8 bytes truncated of 16 ...]\nop");
        assert_eq!((got.total_bytes, got.truncated), (16, true));
    }

    #[test]
    fn capped_buffer_is_exact_under_the_cap() {
        let mut buf = CappedBuffer::new(100);
        buf.push(b"hello ");
        buf.push(b"world");
        assert_eq!(buf.to_captured().text, "hello world");
    }
}
