use std::os::unix::fs::symlink;

use super::*;

struct Fixture {
    _outside: tempfile::TempDir,
    outside: PathBuf,
    _root: tempfile::TempDir,
    ws: Workspace,
}

/// A workspace with `src/lib.rs`, and a sibling directory outside it holding `secret`.
fn fixture() -> Fixture {
    let root = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    std::fs::create_dir(root.path().join("src")).unwrap();
    std::fs::write(root.path().join("src/lib.rs"), "fn main() {}").unwrap();
    std::fs::write(outside.path().join("secret"), "s3cret").unwrap();
    Fixture {
        ws: Workspace::new(root.path()).unwrap(),
        outside: outside.path().canonicalize().unwrap(),
        _outside: outside,
        _root: root,
    }
}

#[test]
fn resolves_relative_dotted_and_absolute_paths_inside() {
    let f = fixture();
    let lib = f.ws.root().join("src/lib.rs");
    assert_eq!(f.ws.resolve("src/lib.rs").unwrap(), lib);
    assert_eq!(f.ws.resolve("./src/../src/lib.rs").unwrap(), lib);
    assert_eq!(f.ws.resolve(lib.to_str().unwrap()).unwrap(), lib);
    assert_eq!(f.ws.resolve("").unwrap(), f.ws.root());
    assert_eq!(f.ws.display_path(&lib), "src/lib.rs");
}

#[test]
fn refuses_dot_dot_and_absolute_escapes() {
    let f = fixture();
    let secret = f.outside.join("secret");
    for path in [
        "../..",
        "/etc/passwd",
        secret.to_str().unwrap(),
        "src/../../x",
    ] {
        let err = f.ws.resolve(path).unwrap_err();
        assert!(
            matches!(err, WorkspaceError::Escapes { .. }),
            "{path}: {err}"
        );
        let err = f.ws.resolve_for_write(path).unwrap_err();
        assert!(
            matches!(err, WorkspaceError::Escapes { .. }),
            "{path}: {err}"
        );
    }
}

#[test]
fn refuses_symlinks_leading_outside_for_reads_and_writes() {
    let f = fixture();
    symlink(f.outside.join("secret"), f.ws.root().join("link")).unwrap();
    symlink(&f.outside, f.ws.root().join("out")).unwrap();
    for path in ["link", "out/secret", "out/new.txt", "out/deeper/new.txt"] {
        let err = f.ws.resolve_for_write(path).unwrap_err();
        assert!(
            matches!(err, WorkspaceError::Escapes { .. }),
            "{path}: {err}"
        );
    }
    assert!(matches!(
        f.ws.resolve("out/secret"),
        Err(WorkspaceError::Escapes { .. })
    ));
}

#[test]
fn symlinks_inside_the_root_are_followed() {
    let f = fixture();
    symlink(f.ws.root().join("src"), f.ws.root().join("code")).unwrap();
    assert_eq!(
        f.ws.resolve("code/lib.rs").unwrap(),
        f.ws.root().join("src/lib.rs")
    );
    assert_eq!(
        f.ws.resolve_for_write("code/new/mod.rs").unwrap(),
        f.ws.root().join("src/new/mod.rs")
    );
}

#[test]
fn broken_links_and_dot_dot_after_missing_dirs_are_refused() {
    let f = fixture();
    symlink("/nonexistent/target", f.ws.root().join("dangling")).unwrap();
    let err = f.ws.resolve_for_write("dangling").unwrap_err();
    assert!(matches!(err, WorkspaceError::BrokenLink { .. }), "{err}");
    let err = f.ws.resolve_for_write("missing/../../escape").unwrap_err();
    assert!(
        matches!(err, WorkspaceError::DotDotAfterMissing { .. }),
        "{err}"
    );
}

#[test]
fn missing_paths_inside_are_not_found_and_outside_are_escapes() {
    let f = fixture();
    assert!(matches!(
        f.ws.resolve("nope.txt"),
        Err(WorkspaceError::NotFound { .. })
    ));
    assert!(matches!(
        f.ws.resolve("../nope.txt"),
        Err(WorkspaceError::Escapes { .. })
    ));
}

#[test]
fn root_must_be_a_directory() {
    let f = fixture();
    let file = f.ws.root().join("src/lib.rs");
    assert!(matches!(
        Workspace::new(&file),
        Err(WorkspaceError::NotADirectory { .. })
    ));
    assert!(matches!(
        Workspace::new("/no/such/dir"),
        Err(WorkspaceError::Root { .. })
    ));
}
