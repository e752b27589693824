//! Selection expressions such as `"file,shell,-shell_exec"`.

use crate::error::SelectionError;

/// A parsed selection expression.
///
/// Grammar: comma-separated items, whitespace ignored.
/// - `name`: the group `name` if such a tag exists, else the tool `name`;
/// - `tag:name` / `tool:name`: only a group / only a tool;
/// - `*`: every tool;
/// - `-item`: remove what `item` names (applied after all inclusions).
///
/// An expression with only exclusions starts from every tool, so `"-shell"`
/// means "everything but the shell group". The empty expression selects nothing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Selection {
    pub(crate) items: Vec<SelectionItem>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct SelectionItem {
    pub(crate) exclude: bool,
    pub(crate) target: Target,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Target {
    All,
    Either(String),
    Group(String),
    Tool(String),
}

impl Selection {
    /// Parses `expr`.
    ///
    /// # Errors
    /// [`SelectionError::Syntax`] naming the item and what is wrong with it.
    pub fn parse(expr: &str) -> Result<Self, SelectionError> {
        let mut items = Vec::new();
        if expr.trim().is_empty() {
            return Ok(Self { items });
        }
        for (position, raw) in expr.split(',').enumerate() {
            let syntax = |reason| SelectionError::Syntax {
                position,
                item: raw.to_owned(),
                reason,
            };
            let item = raw.trim();
            let (exclude, body) = match item.strip_prefix('-') {
                Some(rest) => (true, rest.trim()),
                None => (false, item.strip_prefix('+').map_or(item, str::trim)),
            };
            if body.is_empty() {
                return Err(syntax(
                    "empty item; remove the extra comma or name a group or tool",
                ));
            }
            let target = if body == "*" {
                Target::All
            } else if let Some(group) = body.strip_prefix("tag:") {
                Target::Group(group.trim().to_owned())
            } else if let Some(tool) = body.strip_prefix("tool:") {
                Target::Tool(tool.trim().to_owned())
            } else {
                Target::Either(body.to_owned())
            };
            if matches!(&target, Target::Group(n) | Target::Tool(n) if n.is_empty()) {
                return Err(syntax("a `tag:` or `tool:` prefix needs a name after it"));
            }
            items.push(SelectionItem { exclude, target });
        }
        Ok(Self { items })
    }

    /// Whether the expression selects nothing.
    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }
}

impl std::str::FromStr for Selection {
    type Err = SelectionError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::parse(s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_every_item_form() {
        let sel = Selection::parse(" file, tag:shell ,tool:git,-shell_exec,*, +web").unwrap();
        let targets: Vec<_> = sel
            .items
            .iter()
            .map(|i| (i.exclude, i.target.clone()))
            .collect();
        assert_eq!(
            targets,
            vec![
                (false, Target::Either("file".into())),
                (false, Target::Group("shell".into())),
                (false, Target::Tool("git".into())),
                (true, Target::Either("shell_exec".into())),
                (false, Target::All),
                (false, Target::Either("web".into())),
            ]
        );
    }

    #[test]
    fn rejects_empty_items_with_position() {
        let err = Selection::parse("file,,shell").unwrap_err();
        assert_eq!(
            err.to_string(),
            "invalid selection item 1 (\"\"): empty item; remove the extra comma or name a group or tool"
        );
        assert!(Selection::parse("tag:").is_err());
        assert!(Selection::parse("-").is_err());
        assert!(Selection::parse("").unwrap().is_empty());
    }
}
