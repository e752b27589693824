//! [`Secrets`]: the declared secrets `{{secret.NAME}}` may name, and nothing else.
//!
//! A secret is declared by the operator in one of three ways: an environment variable with the
//! [`ENV_PREFIX`] (`TOOLBELT_SECRET_GITHUB_TOKEN` declares `GITHUB_TOKEN`), a line of a secrets
//! file (`--secrets-file`, or the file [`FILE_VAR`] names), or a plain environment variable whose
//! name the host lists ([`ENV_NAMES_VAR`], [`Secrets::allow_env`]). Any other environment variable
//! (`OPENAI_API_KEY`, database credentials) is never read, so a definition cannot name it, and
//! the error for an undeclared name is the same whether such a variable exists or not.

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// The prefix that declares an environment variable a secret: `TOOLBELT_SECRET_NAME` is
/// `{{secret.NAME}}`.
pub const ENV_PREFIX: &str = "TOOLBELT_SECRET_";

/// The environment variable naming a secrets file, read at each lookup (so a rotated value is
/// used without a restart).
pub const FILE_VAR: &str = "TOOLBELT_SECRETS_FILE";

/// The environment variable listing plain environment variables that are secrets under their
/// own names (comma-separated, e.g. `GITHUB_TOKEN,SLACK_TOKEN`).
pub const ENV_NAMES_VAR: &str = "TOOLBELT_SECRETS_ENV";

/// A secret that cannot be resolved. The message names the secret and how to declare it, and
/// never a value.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SecretError {
    /// No declared source holds the name.
    #[error(
        "the secret `{name}` is not declared; ask the operator to set the environment variable \
         {ENV_PREFIX}{name} or add `{name}=...` to the secrets file"
    )]
    NotDeclared {
        /// The secret's name.
        name: String,
    },
    /// The secrets file named by [`FILE_VAR`] cannot be read or parsed.
    #[error("the secret `{name}` cannot be looked up: the secrets file {} is unusable", path.display())]
    File {
        /// The secret's name.
        name: String,
        /// The file.
        path: PathBuf,
        /// Why it cannot be used.
        #[source]
        source: std::io::Error,
    },
}

/// Where `{{secret.NAME}}` values come from (see the module docs). Values are never written to
/// the store or logs, and `Debug` shows names only.
#[derive(Clone, Default)]
pub struct Secrets {
    /// Declared values by name: prefixed or allow-listed variables, files read at construction,
    /// fixed pairs. Earlier sources win (the environment over a file).
    values: Arc<BTreeMap<String, String>>,
    /// The file [`FILE_VAR`] named, read at each lookup after `values`.
    file: Option<PathBuf>,
}

impl std::fmt::Debug for Secrets {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Secrets")
            .field("names", &self.values.keys().collect::<Vec<_>>())
            .field("file", &self.file)
            .finish()
    }
}

impl Secrets {
    /// The secrets the process environment declares: [`ENV_PREFIX`] variables, the plain
    /// variables [`ENV_NAMES_VAR`] lists, and the file [`FILE_VAR`] names.
    pub fn from_env() -> Self {
        Self::from_vars(std::env::vars_os())
    }

    /// [`Secrets::from_env`] over the given variables instead of the process environment
    /// (tests, or a host that filters its environment). Variables that are not UTF-8 are skipped.
    pub fn from_vars<I, K, V>(vars: I) -> Self
    where
        I: IntoIterator<Item = (K, V)>,
        K: Into<OsString>,
        V: Into<OsString>,
    {
        let vars: BTreeMap<String, String> = vars
            .into_iter()
            .filter_map(|(k, v)| Some((k.into().into_string().ok()?, v.into().into_string().ok()?)))
            .collect();
        let mut values = BTreeMap::new();
        if let Some(names) = vars.get(ENV_NAMES_VAR) {
            for name in names.split(',').map(str::trim).filter(|n| is_name(n)) {
                if let Some(value) = vars.get(name) {
                    values.insert(name.to_owned(), value.clone());
                }
            }
        }
        // A prefixed variable wins over a plain one of the same name.
        for (key, value) in &vars {
            if let Some(name) = key.strip_prefix(ENV_PREFIX).filter(|n| is_name(n)) {
                values.insert(name.to_owned(), value.clone());
            }
        }
        Self {
            values: Arc::new(values),
            file: vars
                .get(FILE_VAR)
                .filter(|p| !p.is_empty())
                .map(PathBuf::from),
        }
    }

    /// The environment's secrets ([`Secrets::from_env`]), then the secrets file at `path`.
    ///
    /// # Errors
    /// The file cannot be read, or a line is not `NAME=value` (the error names the line number,
    /// never the value).
    pub fn from_env_and_file(path: &Path) -> std::io::Result<Self> {
        let mut secrets = Self::from_env();
        let mut values = parse_file(path)?;
        values.extend(secrets.values.iter().map(|(k, v)| (k.clone(), v.clone())));
        secrets.values = Arc::new(values);
        Ok(secrets)
    }

    /// Fixed secrets, without the environment (tests, embedding).
    pub fn from_pairs<I, K, V>(pairs: I) -> Self
    where
        I: IntoIterator<Item = (K, V)>,
        K: Into<String>,
        V: Into<String>,
    {
        Self {
            values: Arc::new(
                pairs
                    .into_iter()
                    .map(|(k, v)| (k.into(), v.into()))
                    .collect(),
            ),
            file: None,
        }
    }

    /// Also declares the plain process environment variables `names` as secrets under their own
    /// names (read now; a declared value of the same name is kept).
    #[must_use]
    pub fn allow_env<I, S>(self, names: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: AsRef<str>,
    {
        let mut values = (*self.values).clone();
        for name in names {
            let name = name.as_ref();
            if let Some(value) = std::env::var_os(name).and_then(|v| v.into_string().ok()) {
                values.entry(name.to_owned()).or_insert(value);
            }
        }
        Self {
            values: Arc::new(values),
            file: self.file,
        }
    }

    /// The value of the declared secret `name`.
    ///
    /// # Errors
    /// [`SecretError::NotDeclared`] when no source declares it (the same error whether or not
    /// an environment variable of that name exists); [`SecretError::File`] when the file
    /// [`FILE_VAR`] names cannot be read.
    pub fn resolve(&self, name: &str) -> Result<String, SecretError> {
        if let Some(value) = self.values.get(name) {
            return Ok(value.clone());
        }
        if let Some(path) = &self.file {
            let file = parse_file(path).map_err(|source| SecretError::File {
                name: name.to_owned(),
                path: path.clone(),
                source,
            })?;
            if let Some(value) = file.get(name) {
                return Ok(value.clone());
            }
        }
        Err(SecretError::NotDeclared {
            name: name.to_owned(),
        })
    }

    /// The value of `name`, if declared.
    pub fn get(&self, name: &str) -> Option<String> {
        self.resolve(name).ok()
    }

    /// Whether `name` is declared (for availability conditions).
    pub fn contains(&self, name: &str) -> bool {
        self.get(name).is_some()
    }

    /// `text` with each `{{secret.NAME}}` (inner spaces allowed) replaced by the secret's value;
    /// other `{{...}}` stay as they are. Returns the values used, for scrubbing.
    ///
    /// # Errors
    /// The first secret that cannot be resolved.
    pub fn fill(&self, text: &str) -> Result<(String, Vec<String>), SecretError> {
        let mut out = String::with_capacity(text.len());
        let mut used = Vec::new();
        let mut rest = text;
        while let Some((before, reference, after)) = next_reference(rest) {
            out.push_str(before);
            match reference {
                Reference::Secret(name) => {
                    let value = self.resolve(name)?;
                    out.push_str(&value);
                    used.push(value);
                }
                Reference::Other(raw) => out.push_str(raw),
            }
            rest = after;
        }
        out.push_str(rest);
        Ok((out, used))
    }
}

/// The names of the `{{secret.NAME}}` references in `text` (inner spaces allowed), in order.
pub fn secret_names(text: &str) -> Vec<&str> {
    let mut names = Vec::new();
    let mut rest = text;
    while let Some((_, reference, after)) = next_reference(rest) {
        if let Reference::Secret(name) = reference {
            names.push(name);
        }
        rest = after;
    }
    names
}

enum Reference<'a> {
    Secret(&'a str),
    Other(&'a str),
}

/// The text before the next `{{...}}`, the reference, and the text after it.
fn next_reference(text: &str) -> Option<(&str, Reference<'_>, &str)> {
    let start = text.find("{{")?;
    let end = start + 2 + text[start + 2..].find("}}")?;
    let inner = text[start + 2..end].trim();
    let reference = match inner.strip_prefix("secret.").map(str::trim) {
        Some(name) if is_name(name) => Reference::Secret(name),
        _ => Reference::Other(&text[start..end + 2]),
    };
    Some((&text[..start], reference, &text[end + 2..]))
}

/// A secret name: ASCII letters, digits and `_`, not empty.
pub(crate) fn is_name(name: &str) -> bool {
    !name.is_empty() && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
}

/// Reads a secrets file: `NAME=value` lines, an optional leading `export `, `#` comment lines
/// and blank lines. Names and values are trimmed and one pair of matching quotes (`"` or `'`)
/// around a value is removed; nothing is unescaped or substituted, so a value is taken as
/// written.
fn parse_file(path: &Path) -> std::io::Result<BTreeMap<String, String>> {
    let text = std::fs::read_to_string(path)?;
    let mut values = BTreeMap::new();
    for (i, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let line = line.strip_prefix("export ").unwrap_or(line);
        let parsed = line
            .split_once('=')
            .map(|(name, value)| (name.trim(), unquote(value.trim())))
            .filter(|(name, _)| is_name(name));
        let Some((name, value)) = parsed else {
            return Err(std::io::Error::new(
                std::io::ErrorKind::InvalidData,
                format!(
                    "{}: line {} is not NAME=value (a name is ASCII letters, digits and `_`)",
                    path.display(),
                    i + 1
                ),
            ));
        };
        values.insert(name.to_owned(), value.to_owned());
    }
    Ok(values)
}

fn unquote(value: &str) -> &str {
    for quote in ['"', '\''] {
        if let Some(inner) = value
            .strip_prefix(quote)
            .and_then(|v| v.strip_suffix(quote))
        {
            return inner;
        }
    }
    value
}

#[cfg(test)]
mod tests;
