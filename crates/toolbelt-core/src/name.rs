//! Tool names and the character set every major LLM API accepts.

use std::borrow::Borrow;
use std::fmt;
use std::sync::Arc;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::error::SpecError;

/// The longest tool name the registry holds: MCP's limit.
pub const MAX_NAME_LEN: usize = 128;

/// The longest name OpenAI and Anthropic accept for a function.
pub const MAX_PROVIDER_NAME_LEN: usize = 64;

/// A validated tool name: 1 to 128 bytes of printable text.
///
/// The registry keeps names as their source wrote them, so an MCP tool called
/// `github.create_issue`, a catalog entry called `math/factorial` or one
/// called `Get Weather` keep their names. What is refused: the empty name,
/// more than [`MAX_NAME_LEN`] bytes, control characters, leading or trailing
/// whitespace, and `,` (the separator of selection expressions).
///
/// LLM APIs accept less (`^[a-zA-Z0-9_-]{1,64}$` at OpenAI and Anthropic):
/// [`ToolName::is_provider_safe`] tells whether a name can be sent as it is;
/// other names are mapped per request by the LLM layer and mapped back when
/// the model calls them (ADR 0007). Cloning is cheap.
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
    /// Control characters and `,` become `_`, surrounding whitespace is
    /// trimmed, the result is cut to [`MAX_NAME_LEN`] bytes (on a character
    /// boundary) and an empty name becomes `_`; a valid name is kept as it is.
    ///
    /// ```
    /// use toolbelt_core::ToolName;
    /// assert_eq!(ToolName::sanitized("github.create_issue").as_str(), "github.create_issue");
    /// assert_eq!(ToolName::sanitized(" a,b\n").as_str(), "a_b");
    /// ```
    pub fn sanitized(name: &str) -> Self {
        let mut clean = String::with_capacity(name.len().min(MAX_NAME_LEN));
        for c in name.trim().chars() {
            let c = if c.is_control() || c == ',' { '_' } else { c };
            if clean.len() + c.len_utf8() > MAX_NAME_LEN {
                break;
            }
            clean.push(c);
        }
        let clean = clean.trim_end();
        if clean.is_empty() {
            return Self(Arc::from("_"));
        }
        Self(Arc::from(clean))
    }

    /// The name as a string slice.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// Whether OpenAI and Anthropic accept this name as it is:
    /// `[A-Za-z0-9_-]{1,64}`.
    ///
    /// ```
    /// use toolbelt_core::ToolName;
    /// assert!(ToolName::new("file_read").unwrap().is_provider_safe());
    /// assert!(!ToolName::new("github.create_issue").unwrap().is_provider_safe());
    /// ```
    pub fn is_provider_safe(&self) -> bool {
        is_provider_safe(&self.0)
    }
}

/// Whether `name` matches `[A-Za-z0-9_-]{1,64}`, what OpenAI and Anthropic accept.
pub fn is_provider_safe(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= MAX_PROVIDER_NAME_LEN
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

/// Checks `name` against the tool-name rule of [`ToolName`]; `what` names the thing checked.
pub(crate) fn validate_name(name: &str, what: &'static str) -> Result<(), SpecError> {
    let invalid = |reason: String| SpecError::InvalidName {
        name: name.to_owned(),
        what,
        reason,
    };
    if name.is_empty() {
        return Err(invalid("must not be empty".to_owned()));
    }
    if name.len() > MAX_NAME_LEN {
        return Err(invalid(format!(
            "is {} bytes long; at most {MAX_NAME_LEN} are allowed",
            name.len()
        )));
    }
    if name.trim() != name {
        return Err(invalid(
            "starts or ends with whitespace; trim it".to_owned(),
        ));
    }
    if let Some((at, ch)) = name
        .char_indices()
        .find(|(_, c)| c.is_control() || *c == ',')
    {
        return Err(invalid(format!(
            "has {ch:?} at byte {at}; control characters and ',' are not allowed"
        )));
    }
    Ok(())
}

/// Checks `name` against the strict rule `[A-Za-z0-9_-]{1,64}` (used for tags).
pub(crate) fn validate_strict_name(name: &str, what: &'static str) -> Result<(), SpecError> {
    if name.is_empty() {
        return Err(SpecError::InvalidName {
            name: name.to_owned(),
            what,
            reason: "must not be empty".to_owned(),
        });
    }
    if name.len() > MAX_PROVIDER_NAME_LEN {
        return Err(SpecError::InvalidName {
            name: name.to_owned(),
            what,
            reason: format!(
                "is {} bytes long; at most {MAX_PROVIDER_NAME_LEN} are allowed",
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
    fn accepts_names_as_their_sources_write_them() {
        for ok in [
            "a",
            "file_read",
            "git-status",
            "github.create_issue",
            "math/factorial",
            "ns:tool",
            "Get Weather",
            "读文件",
            &"x".repeat(128),
        ] {
            assert!(ToolName::new(ok).is_ok(), "{ok} should be accepted");
        }
    }

    #[test]
    fn rejects_with_the_culprit_named() {
        let err = ToolName::new("a,b").unwrap_err().to_string();
        assert_eq!(
            err,
            "invalid tool name \"a,b\": has ',' at byte 1; control characters and ',' are not allowed"
        );
        assert!(
            ToolName::new("")
                .unwrap_err()
                .to_string()
                .contains("must not be empty")
        );
        assert!(
            ToolName::new("x".repeat(129))
                .unwrap_err()
                .to_string()
                .contains("129 bytes")
        );
        assert!(ToolName::new(" padded").is_err());
        assert!(ToolName::new("tab\there").is_err());
    }

    #[test]
    fn provider_safety_is_the_api_character_set() {
        assert!(is_provider_safe("file_read"));
        assert!(is_provider_safe(&"x".repeat(64)));
        assert!(!is_provider_safe(&"x".repeat(65)));
        assert!(!is_provider_safe("a.b"));
        assert!(!is_provider_safe(""));
    }

    #[test]
    fn sanitized_keeps_valid_names_and_cuts_on_char_boundaries() {
        assert_eq!(
            ToolName::sanitized("math.factorial").as_str(),
            "math.factorial"
        );
        let long = "读".repeat(60); // 180 bytes
        let cut = ToolName::sanitized(&long);
        assert!(cut.as_str().len() <= MAX_NAME_LEN);
        assert!(ToolName::new(cut.as_str()).is_ok());
        assert_eq!(ToolName::sanitized(" \n ").as_str(), "_");
    }
}
