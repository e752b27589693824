//! Tool names and the character set every major LLM API accepts.

use std::borrow::Borrow;
use std::fmt;
use std::sync::Arc;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::error::SpecError;

/// The longest name OpenAI and Anthropic both accept.
pub const MAX_NAME_LEN: usize = 64;

/// A validated tool name: 1 to 64 characters from `[A-Za-z0-9_-]`.
///
/// This is the intersection of what OpenAI (`^[a-zA-Z0-9_-]{1,64}$`) and
/// Anthropic (`^[a-zA-Z0-9_-]{1,64}$`) accept for function names, so a tool
/// that registers can be sent to either provider unchanged. Cloning is cheap.
#[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ToolName(Arc<str>);

impl ToolName {
    /// Validates `name` and wraps it.
    ///
    /// # Errors
    /// [`SpecError::InvalidName`] naming the first offending character, or the
    /// length when the name is empty or longer than [`MAX_NAME_LEN`].
    pub fn new(name: impl AsRef<str>) -> Result<Self, SpecError> {
        let name = name.as_ref();
        validate_name(name, "tool name")?;
        Ok(Self(Arc::from(name)))
    }

    /// A valid name made from any text, for names that come from elsewhere.
    ///
    /// Characters outside `[A-Za-z0-9_-]` become `_`, the result is cut to
    /// [`MAX_NAME_LEN`] bytes and an empty name becomes `_`; a valid name is
    /// kept as it is.
    ///
    /// ```
    /// use toolbelt_core::ToolName;
    /// assert_eq!(ToolName::sanitized("github.create issue").as_str(), "github_create_issue");
    /// ```
    pub fn sanitized(name: &str) -> Self {
        let mut clean: String = name
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                    c
                } else {
                    '_'
                }
            })
            .take(MAX_NAME_LEN)
            .collect();
        if clean.is_empty() {
            clean.push('_');
        }
        Self(Arc::from(clean))
    }

    /// The name as a string slice.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// Checks `name` against `[A-Za-z0-9_-]{1,64}`; `what` names the thing checked.
pub(crate) fn validate_name(name: &str, what: &'static str) -> Result<(), SpecError> {
    if name.is_empty() {
        return Err(SpecError::InvalidName {
            name: name.to_owned(),
            what,
            reason: "must not be empty".to_owned(),
        });
    }
    if name.len() > MAX_NAME_LEN {
        return Err(SpecError::InvalidName {
            name: name.to_owned(),
            what,
            reason: format!(
                "is {} bytes long; at most {MAX_NAME_LEN} are allowed",
                name.len()
            ),
        });
    }
    if let Some((at, ch)) = name
        .char_indices()
        .find(|(_, c)| !(c.is_ascii_alphanumeric() || *c == '_' || *c == '-'))
    {
        return Err(SpecError::InvalidName {
            name: name.to_owned(),
            what,
            reason: format!(
                "has {ch:?} at byte {at}; only ASCII letters, digits, '_' and '-' are allowed"
            ),
        });
    }
    Ok(())
}

impl fmt::Display for ToolName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl fmt::Debug for ToolName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&*self.0, f)
    }
}

impl AsRef<str> for ToolName {
    fn as_ref(&self) -> &str {
        &self.0
    }
}

impl Borrow<str> for ToolName {
    fn borrow(&self) -> &str {
        &self.0
    }
}

impl PartialEq<str> for ToolName {
    fn eq(&self, other: &str) -> bool {
        &*self.0 == other
    }
}

impl PartialEq<&str> for ToolName {
    fn eq(&self, other: &&str) -> bool {
        &*self.0 == *other
    }
}

impl TryFrom<&str> for ToolName {
    type Error = SpecError;
    fn try_from(value: &str) -> Result<Self, Self::Error> {
        Self::new(value)
    }
}

impl TryFrom<String> for ToolName {
    type Error = SpecError;
    fn try_from(value: String) -> Result<Self, Self::Error> {
        Self::new(value)
    }
}

impl Serialize for ToolName {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&self.0)
    }
}

impl<'de> Deserialize<'de> for ToolName {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let s = String::deserialize(deserializer)?;
        Self::new(s).map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepts_the_provider_character_set() {
        for ok in ["a", "file_read", "git-status", "A1_b-2", &"x".repeat(64)] {
            assert!(ToolName::new(ok).is_ok(), "{ok} should be accepted");
        }
    }

    #[test]
    fn rejects_with_the_culprit_named() {
        let err = ToolName::new("file.read").unwrap_err().to_string();
        assert_eq!(
            err,
            "invalid tool name \"file.read\": has '.' at byte 4; only ASCII letters, digits, '_' and '-' are allowed"
        );
        assert!(
            ToolName::new("")
                .unwrap_err()
                .to_string()
                .contains("must not be empty")
        );
        assert!(
            ToolName::new("x".repeat(65))
                .unwrap_err()
                .to_string()
                .contains("65 bytes")
        );
        assert!(ToolName::new("读文件").is_err());
    }
}
