//! What confining a command costs: starting and reaping `true` in full-access
//! mode (a PID namespace only) and confined in workspace-write mode (Landlock,
//! namespaces, the `/proc` mount, the capability drop and seccomp).
#![allow(clippy::unwrap_used, clippy::print_stderr)]

use criterion::{Criterion, criterion_group, criterion_main};
use toolbelt_tools::sandbox::{Sandbox, SandboxMode, SandboxPolicy, probe};

fn spawn_true(c: &mut Criterion) {
    eprintln!("{}", probe().summary());
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    let mut group = c.benchmark_group("sandbox_spawn_true");
    group.sample_size(30);
    for mode in [SandboxMode::FullAccess, SandboxMode::WorkspaceWrite] {
        let sandbox = Sandbox::new(&root, SandboxPolicy::new().with_mode(mode));
        group.bench_function(mode.as_str(), |b| {
            b.to_async(&runtime).iter(|| async {
                let cmd = sandbox.command(&["true"]).unwrap();
                let mut child = sandbox.spawn(cmd).await.unwrap();
                assert!(child.child.wait().await.unwrap().success());
            });
        });
    }
    group.finish();
}

criterion_group!(benches, spawn_true);
criterion_main!(benches);
