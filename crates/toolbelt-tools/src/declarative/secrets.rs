//! [`Secrets`]: named secrets resolved at call time from the environment or a secrets file.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

/// Where `{{secret.NAME}}` values come from: the process environment first, then a secrets
/// file (`NAME=value` lines; `#` comments). Values are never written to the store or logs.
#[derive(Clone, Default)]
pub struct Secrets {
    file: Arc<BTreeMap<String, String>>,
    use_env: bool,
}

impl std::fmt::Debug for Secrets {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Secrets")
            .field("file_names", &self.file.keys().collect::<Vec<_>>())
            .field("use_env", &self.use_env)
            .finish()
    }
}

impl Secrets {
    /// Secrets from the process environment only.
    pub fn from_env() -> Self {
        Self {
            file: Arc::default(),
            use_env: true,
        }
    }

    /// Secrets from the environment, then the file at `path`.
    ///
    /// # Errors
    /// The file cannot be read, or a line is not `NAME=value` (the error names the line number,
    /// never the value).
    pub fn from_env_and_file(path: &Path) -> std::io::Result<Self> {
        let text = std::fs::read_to_string(path)?;
        let mut file = BTreeMap::new();
        for (i, line) in text.lines().enumerate() {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let (name, value) = line.split_once('=').ok_or_else(|| {
                std::io::Error::new(
                    std::io::ErrorKind::InvalidData,
                    format!("{}: line {} is not NAME=value", path.display(), i + 1),
                )
            })?;
            file.insert(name.trim().to_owned(), value.trim().to_owned());
        }
        Ok(Self {
            file: Arc::new(file),
            use_env: true,
        })
    }

    /// Fixed secrets, without the environment (tests, embedding).
    pub fn from_pairs<I, K, V>(pairs: I) -> Self
    where
        I: IntoIterator<Item = (K, V)>,
        K: Into<String>,
        V: Into<String>,
    {
        Self {
            file: Arc::new(
                pairs
                    .into_iter()
                    .map(|(k, v)| (k.into(), v.into()))
                    .collect(),
            ),
            use_env: false,
        }
    }

    /// The value of `name`, if set.
    pub fn get(&self, name: &str) -> Option<String> {
        if self.use_env
            && let Ok(value) = std::env::var(name)
        {
            return Some(value);
        }
        self.file.get(name).cloned()
    }

    /// Whether `name` is set (for availability conditions).
    pub fn contains(&self, name: &str) -> bool {
        self.get(name).is_some()
    }
}
