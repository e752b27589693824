//! The arguments of `#[tool(...)]`, parsed and checked at compile time.

use std::time::Duration;

use syn::meta::ParseNestedMeta;
use syn::punctuated::Punctuated;
use syn::{LitBool, LitInt, LitStr, Token};

/// Every key `#[tool(...)]` accepts, in the order the docs list them.
pub(crate) const KNOWN_KEYS: &[&str] = &[
    "name",
    "description",
    "tags",
    "timeout",
    "retries",
    "version",
    "mutating",
    "read_only",
    "needs_approval",
    "parallel",
    "cacheable",
    "waits",
    "idempotent",
    "max_output",
    "overflow",
    "kind",
    "discover",
    "crate",
];

/// The longest tool name the registry holds (as `toolbelt_core::MAX_NAME_LEN`).
const MAX_NAME_LEN: usize = 128;

/// The longest tag (as `toolbelt_core::MAX_PROVIDER_NAME_LEN`).
const MAX_TAG_LEN: usize = 64;

/// Read-only or mutating, as written (`read_only` / `mutating`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Effect {
    ReadOnly,
    Mutating,
}

/// `overflow = "..."`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Overflow {
    Truncate,
    Spill,
    Fail,
}

/// `kind = "..."`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    Function,
    Agent,
    Mcp,
    Meta,
}

/// Everything written inside `#[tool(...)]`; `None` means "not given".
#[derive(Debug, Default)]
pub(crate) struct ToolArgs {
    pub(crate) name: Option<String>,
    pub(crate) description: Option<String>,
    pub(crate) tags: Vec<String>,
    pub(crate) timeout: Option<Duration>,
    pub(crate) retries: Option<u32>,
    pub(crate) version: Option<String>,
    pub(crate) effect: Option<Effect>,
    pub(crate) needs_approval: Option<bool>,
    pub(crate) parallel: Option<bool>,
    pub(crate) cacheable: Option<bool>,
    pub(crate) waits: Option<bool>,
    pub(crate) idempotent: Option<bool>,
    pub(crate) max_output: Option<usize>,
    pub(crate) overflow: Option<Overflow>,
    pub(crate) kind: Option<Kind>,
    pub(crate) discover: Option<bool>,
    pub(crate) crate_path: Option<syn::Path>,
    /// Keys seen so far, to reject duplicates.
    seen: Vec<String>,
}

impl ToolArgs {
    /// Parses one `key`, `key = value` or `key(...)` item; used with [`syn::meta::parser`].
    pub(crate) fn parse_item(&mut self, meta: ParseNestedMeta<'_>) -> syn::Result<()> {
        let Some(key) = meta.path.get_ident().map(ToString::to_string) else {
            return Err(unknown_key(&meta, "a path"));
        };
        // `crate` is a keyword, so it arrives as an identifier spelled `crate`.
        if self.seen.contains(&key) {
            return Err(meta.error(format!("duplicate `{key}` in #[tool(...)]")));
        }
        match key.as_str() {
            "name" => {
                let lit: LitStr = meta.value()?.parse()?;
                check_name(&lit.value(), "tool name")
                    .map_err(|e| syn::Error::new(lit.span(), e))?;
                self.name = Some(lit.value());
            }
            "description" => {
                let lit: LitStr = meta.value()?.parse()?;
                let text = lit.value().trim().to_owned();
                if text.is_empty() {
                    return Err(syn::Error::new(
                        lit.span(),
                        "`description` must not be empty; models choose tools by it",
                    ));
                }
                self.description = Some(text);
            }
            "tags" => self.tags = parse_tags(&meta)?,
            "timeout" => {
                let lit: LitStr = meta.value()?.parse()?;
                let timeout =
                    parse_duration(&lit.value()).map_err(|e| syn::Error::new(lit.span(), e))?;
                self.timeout = Some(timeout);
            }
            "retries" => {
                let lit: LitInt = meta.value()?.parse()?;
                self.retries = Some(lit.base10_parse::<u32>().map_err(|_| {
                    syn::Error::new(
                        lit.span(),
                        "`retries` must be an integer from 0 to 4294967295",
                    )
                })?);
            }
            "version" => {
                let lit: LitStr = meta.value()?.parse()?;
                if lit.value().trim().is_empty() {
                    return Err(syn::Error::new(lit.span(), "`version` must not be empty"));
                }
                self.version = Some(lit.value());
            }
            "mutating" | "read_only" => {
                let effect = if key == "mutating" {
                    Effect::Mutating
                } else {
                    Effect::ReadOnly
                };
                if meta.input.peek(Token![=]) {
                    return Err(
                        meta.error(format!("`{key}` is a flag: write `{key}` without a value"))
                    );
                }
                if self.effect.is_some() {
                    return Err(
                        meta.error("`mutating` and `read_only` exclude each other; keep one")
                    );
                }
                self.effect = Some(effect);
            }
            "needs_approval" => self.needs_approval = Some(parse_bool(&meta)?),
            "parallel" => self.parallel = Some(parse_bool(&meta)?),
            "discover" => self.discover = Some(parse_bool(&meta)?),
            "idempotent" => {
                // A bare flag means `idempotent = true`.
                self.idempotent = Some(if meta.input.peek(Token![=]) {
                    parse_bool(&meta)?
                } else {
                    true
                });
            }
            "waits" => {
                // A bare flag means `waits = true`.
                self.waits = Some(if meta.input.peek(Token![=]) {
                    parse_bool(&meta)?
                } else {
                    true
                });
            }
            "cacheable" => {
                // A bare flag means `cacheable = true`.
                self.cacheable = Some(if meta.input.peek(Token![=]) {
                    parse_bool(&meta)?
                } else {
                    true
                });
            }
            "max_output" => {
                let lit: LitInt = meta.value()?.parse()?;
                let bytes = lit
                    .base10_parse::<usize>()
                    .ok()
                    .filter(|b| *b > 0)
                    .ok_or_else(|| {
                        syn::Error::new(
                            lit.span(),
                            "`max_output` must be a positive number of bytes",
                        )
                    })?;
                self.max_output = Some(bytes);
            }
            "overflow" => {
                let lit: LitStr = meta.value()?.parse()?;
                self.overflow = Some(match lit.value().as_str() {
                    "truncate" => Overflow::Truncate,
                    "spill" => Overflow::Spill,
                    "fail" => Overflow::Fail,
                    other => {
                        return Err(syn::Error::new(
                            lit.span(),
                            format!(
                                "unknown overflow {other:?}; expected \"truncate\", \"spill\" or \"fail\""
                            ),
                        ));
                    }
                });
            }
            "kind" => {
                let lit: LitStr = meta.value()?.parse()?;
                self.kind = Some(match lit.value().as_str() {
                    "function" => Kind::Function,
                    "agent" => Kind::Agent,
                    "mcp" => Kind::Mcp,
                    "meta" => Kind::Meta,
                    other => {
                        return Err(syn::Error::new(
                            lit.span(),
                            format!(
                                "unknown kind {other:?}; expected \"function\", \"agent\", \"mcp\" or \"meta\""
                            ),
                        ));
                    }
                });
            }
            "crate" => {
                let lit: LitStr = meta.value()?.parse()?;
                let path = lit.parse::<syn::Path>().map_err(|_| {
                    syn::Error::new(
                        lit.span(),
                        format!(
                            "`crate` must be a path such as \"::toolbelt\", found {:?}",
                            lit.value()
                        ),
                    )
                })?;
                self.crate_path = Some(path);
            }
            _ => return Err(unknown_key(&meta, &format!("`{key}`"))),
        }
        self.seen.push(key);
        Ok(())
    }
}

fn unknown_key(meta: &ParseNestedMeta<'_>, what: &str) -> syn::Error {
    meta.error(format!(
        "unknown #[tool] argument {what}; expected one of: {}",
        KNOWN_KEYS.join(", ")
    ))
}

/// `key = true|false`.
fn parse_bool(meta: &ParseNestedMeta<'_>) -> syn::Result<bool> {
    let key = meta
        .path
        .get_ident()
        .map(ToString::to_string)
        .unwrap_or_default();
    if !meta.input.peek(Token![=]) {
        return Err(meta.error(format!("expected `{key} = true` or `{key} = false`")));
    }
    let lit: LitBool = meta.value()?.parse()?;
    Ok(lit.value)
}

/// `tags("file", "io")`, each tag checked like the core does.
fn parse_tags(meta: &ParseNestedMeta<'_>) -> syn::Result<Vec<String>> {
    let content;
    syn::parenthesized!(content in meta.input);
    let lits = Punctuated::<LitStr, Token![,]>::parse_terminated(&content)?;
    let mut tags: Vec<String> = Vec::new();
    for lit in lits {
        let tag = lit.value();
        check_tag(&tag).map_err(|e| syn::Error::new(lit.span(), e))?;
        if tags.contains(&tag) {
            return Err(syn::Error::new(
                lit.span(),
                format!("duplicate tag {tag:?}"),
            ));
        }
        tags.push(tag);
    }
    Ok(tags)
}

/// Checks a tool name against the rule of `toolbelt_core::ToolName`: 1 to 128
/// bytes, no control characters, no `,`, no surrounding whitespace.
pub(crate) fn check_name(name: &str, what: &str) -> Result<(), String> {
    if name.is_empty() {
        return Err(format!("invalid {what} {name:?}: must not be empty"));
    }
    if name.len() > MAX_NAME_LEN {
        return Err(format!(
            "invalid {what} {name:?}: is {} bytes long; at most {MAX_NAME_LEN} are allowed",
            name.len()
        ));
    }
    if name.trim() != name {
        return Err(format!(
            "invalid {what} {name:?}: starts or ends with whitespace; trim it"
        ));
    }
    if let Some((at, ch)) = name
        .char_indices()
        .find(|(_, c)| c.is_control() || *c == ',')
    {
        return Err(format!(
            "invalid {what} {name:?}: has {ch:?} at byte {at}; control characters and ',' are not allowed"
        ));
    }
    Ok(())
}

/// Tags are `[A-Za-z0-9_-]{1,64}` plus `.` and `:` for namespaces (`mcp:github`), as in the core.
pub(crate) fn check_tag(tag: &str) -> Result<(), String> {
    if tag.is_empty() {
        return Err(format!("invalid tag {tag:?}: must not be empty"));
    }
    if tag.len() > MAX_TAG_LEN {
        return Err(format!(
            "invalid tag {tag:?}: is {} bytes long; at most {MAX_TAG_LEN} are allowed",
            tag.len()
        ));
    }
    if let Some((at, ch)) = tag
        .char_indices()
        .find(|(_, c)| !(c.is_ascii_alphanumeric() || matches!(*c, '_' | '-' | '.' | ':')))
    {
        return Err(format!(
            "invalid tag {tag:?}: has {ch:?} at byte {at}; only ASCII letters, digits, '_' and '-' are allowed"
        ));
    }
    Ok(())
}

/// Parses `"500ms"`, `"30s"`, `"2m"`, `"1h"` (a positive integer and a unit).
pub(crate) fn parse_duration(text: &str) -> Result<Duration, String> {
    const EXPECTED: &str =
        "expected a positive integer and a unit, like \"500ms\", \"30s\", \"2m\" or \"1h\"";
    let trimmed = text.trim();
    let split = trimmed
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(trimmed.len());
    let (digits, unit) = trimmed.split_at(split);
    let amount: u64 = digits
        .parse()
        .map_err(|_| format!("invalid timeout {text:?}: {EXPECTED}"))?;
    if amount == 0 {
        return Err(format!(
            "invalid timeout {text:?}: must be greater than zero"
        ));
    }
    let millis_per_unit: u64 = match unit.trim() {
        "ms" => 1,
        "s" => 1_000,
        "m" => 60_000,
        "h" => 3_600_000,
        _ => return Err(format!("invalid timeout {text:?}: {EXPECTED}")),
    };
    amount
        .checked_mul(millis_per_unit)
        .map(Duration::from_millis)
        .ok_or_else(|| format!("invalid timeout {text:?}: too long"))
}

#[cfg(test)]
mod tests;
