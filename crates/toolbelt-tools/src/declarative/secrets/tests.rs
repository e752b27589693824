//! Which sources declare a secret, and what an undeclared name reveals.

#![allow(clippy::unwrap_used)]

use pretty_assertions::assert_eq;

use super::*;

fn vars(pairs: &[(&str, &str)]) -> Secrets {
    Secrets::from_vars(pairs.iter().map(|(k, v)| (*k, *v)))
}

#[test]
fn only_prefixed_or_listed_variables_are_secrets() {
    let secrets = vars(&[
        ("TOOLBELT_SECRET_GITHUB_TOKEN", "ghp_1"),
        ("OPENAI_API_KEY", "sk-live"),
        ("SLACK_TOKEN", "xoxb"),
        ("TOOLBELT_SECRETS_ENV", "SLACK_TOKEN, MISSING_ONE"),
    ]);
    assert_eq!(secrets.get("GITHUB_TOKEN").as_deref(), Some("ghp_1"));
    assert_eq!(secrets.get("SLACK_TOKEN").as_deref(), Some("xoxb"));
    assert_eq!(secrets.get("OPENAI_API_KEY"), None);
    assert_eq!(secrets.get("TOOLBELT_SECRET_GITHUB_TOKEN"), None);
    assert_eq!(
        format!("{secrets:?}"),
        "Secrets { names: [\"GITHUB_TOKEN\", \"SLACK_TOKEN\"], file: None }"
    );
}

#[test]
fn an_undeclared_name_reads_the_same_whether_or_not_the_variable_exists() {
    let secrets = vars(&[("OPENAI_API_KEY", "sk-live")]);
    let existing = secrets.resolve("OPENAI_API_KEY").unwrap_err().to_string();
    let absent = secrets.resolve("NO_SUCH_VAR").unwrap_err().to_string();
    assert_eq!(
        existing,
        "the secret `OPENAI_API_KEY` is not declared; ask the operator to set the environment \
         variable TOOLBELT_SECRET_OPENAI_API_KEY or add `OPENAI_API_KEY=...` to the secrets file"
    );
    assert_eq!(absent.replace("NO_SUCH_VAR", "OPENAI_API_KEY"), existing);
    // The real process environment always has PATH; it is not a secret either.
    assert_eq!(Secrets::from_env().get("PATH"), None);
    assert_eq!(
        Secrets::default().allow_env(["PATH"]).get("PATH"),
        std::env::var("PATH").ok()
    );
}

#[test]
fn the_secrets_file_is_read_at_each_lookup_and_takes_values_as_written() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("secrets.env");
    std::fs::write(
        &path,
        "# team tokens\nexport A = \"x y\"\nB='p$$w#rd'\nC=plain=1\n",
    )
    .unwrap();
    let secrets = vars(&[
        ("TOOLBELT_SECRETS_FILE", path.to_str().unwrap()),
        ("TOOLBELT_SECRET_C", "from-env"),
    ]);
    let got: Vec<_> = ["A", "B", "C"].map(|n| secrets.get(n).unwrap()).into();
    assert_eq!(got, ["x y", "p$$w#rd", "from-env"]);
    std::fs::write(&path, "A=rotated\n").unwrap();
    assert_eq!(secrets.get("A").as_deref(), Some("rotated"));
    std::fs::write(&path, "A=1\nnot a pair with s3cret\n").unwrap();
    let err = secrets.resolve("A").unwrap_err();
    let cause = std::error::Error::source(&err).unwrap().to_string();
    assert_eq!(
        (err.to_string(), cause),
        (
            format!(
                "the secret `A` cannot be looked up: the secrets file {} is unusable",
                path.display()
            ),
            format!(
                "{}: line 2 is not NAME=value (a name is ASCII letters, digits and `_`)",
                path.display()
            )
        )
    );
}

#[test]
fn from_env_and_file_prefers_the_environment_and_reports_bad_lines() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.env");
    std::fs::write(&path, "GH=from-file\n").unwrap();
    let secrets = Secrets::from_env_and_file(&path).unwrap();
    assert_eq!(secrets.get("GH").as_deref(), Some("from-file"));
    std::fs::write(&path, "=v\n").unwrap();
    assert_eq!(
        Secrets::from_env_and_file(&path).unwrap_err().to_string(),
        format!(
            "{}: line 1 is not NAME=value (a name is ASCII letters, digits and `_`)",
            path.display()
        )
    );
}

#[test]
fn fill_replaces_secret_references_only() {
    let secrets = Secrets::from_pairs([("T", "t0k"), ("TEAM", "core")]);
    let (text, used) = secrets
        .fill("Bearer {{secret.T}} {{ secret.TEAM }} {{other}} {{secret.bad-name}}")
        .unwrap();
    assert_eq!(
        (text.as_str(), used),
        (
            "Bearer t0k core {{other}} {{secret.bad-name}}",
            vec!["t0k".to_owned(), "core".to_owned()]
        )
    );
    assert_eq!(secret_names("{{ secret.A }}x{{secret.B}}{{c}}"), ["A", "B"]);
    assert!(matches!(
        secrets.fill("{{secret.NOPE}}"),
        Err(SecretError::NotDeclared { name }) if name == "NOPE"
    ));
}
