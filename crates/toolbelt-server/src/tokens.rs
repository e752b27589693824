//! The tokens the server accepts: [`TokenBook`], the [`Principal`] a token stands for, and
//! how a token is made and kept (only its hash).

use std::collections::HashMap;
use std::sync::{Arc, RwLock};

use axum::http::StatusCode;
use sha2::{Digest, Sha256};

use toolbelt_host::AgentAccess;

use crate::config::{ConfigError, ConfigToken};
use crate::problem::Problem;
use crate::scope::Scope;

/// Who made a request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Principal {
    /// The token's name (`dev` in development mode).
    pub name: String,
    /// Its scopes.
    pub scopes: Vec<Scope>,
    /// The agents it may act on (a token limited to agents reaches their tools, runs,
    /// approvals, questions and routines, and nothing of the whole server).
    pub access: AgentAccess,
}

impl Principal {
    /// Whether it holds `needed`.
    pub fn grants(&self, needed: Scope) -> bool {
        self.scopes.iter().any(|s| s.grants(needed))
    }
}

/// Hex SHA-256 of a token: what is kept instead of the token.
pub fn hash_token(token: &str) -> String {
    let digest = Sha256::digest(token.as_bytes());
    let mut out = String::with_capacity(64);
    for byte in digest.iter() {
        out.push_str(&format!("{byte:02x}"));
    }
    out
}

/// A fresh random token, `tb_` + 32 hex digits (128 bits from the OS generator).
pub fn new_token() -> String {
    format!("tb_{}", uuid::Uuid::new_v4().simple())
}

/// The tokens the server accepts, by hash, or none at all in development mode.
#[derive(Debug, Clone)]
pub struct TokenBook {
    dev: bool,
    by_hash: Arc<RwLock<HashMap<String, Principal>>>,
    store: Option<toolbelt_store::Store>,
    /// Tokens verified against the store recently: hash -> (principal, when).
    verified: Arc<RwLock<HashMap<String, (Principal, std::time::Instant)>>>,
}

/// How long a token verified against the store is trusted before it is checked again
/// (a revocation reaches every instance within this time).
pub const STORE_TOKEN_TTL: std::time::Duration = std::time::Duration::from_secs(2);

impl TokenBook {
    /// Development mode: every request is `admin`.
    pub fn dev() -> Self {
        Self {
            dev: true,
            by_hash: Arc::default(),
            store: None,
            verified: Arc::default(),
        }
    }

    /// Accepts exactly `tokens`.
    ///
    /// # Errors
    /// [`ConfigError::BadToken`] for a token with neither a hash nor a value.
    pub fn from_config(tokens: &[ConfigToken]) -> Result<Self, ConfigError> {
        let book = Self {
            dev: false,
            by_hash: Arc::default(),
            store: None,
            verified: Arc::default(),
        };
        for t in tokens {
            let hash = match (&t.sha256, &t.token) {
                (Some(h), _) if h.len() == 64 && h.bytes().all(|b| b.is_ascii_hexdigit()) => {
                    h.to_ascii_lowercase()
                }
                (Some(_), _) => {
                    return Err(ConfigError::BadToken {
                        name: t.name.clone(),
                        reason: "sha256 must be 64 hex digits",
                    });
                }
                (None, Some(token)) => hash_token(token),
                (None, None) => {
                    return Err(ConfigError::BadToken {
                        name: t.name.clone(),
                        reason: "give `sha256` (preferred) or `token`",
                    });
                }
            };
            if let Some(agents) = &t.agents
                && agents.iter().any(|a| a.trim().is_empty())
            {
                return Err(ConfigError::BadToken {
                    name: t.name.clone(),
                    reason: "`agents` names must not be empty",
                });
            }
            book.insert(
                hash,
                Principal {
                    name: t.name.clone(),
                    scopes: t.scopes.clone(),
                    access: AgentAccess::from_list(t.agents.clone()),
                },
            );
        }
        Ok(book)
    }

    /// Also accepts the (unrevoked) tokens stored in `store`.
    #[must_use]
    pub fn with_store(mut self, store: toolbelt_store::Store) -> Self {
        self.store = Some(store);
        self
    }

    /// Whether any token is known, counting stored ones.
    ///
    /// # Errors
    /// The database's error.
    pub async fn has_any_token(&self) -> Result<bool, toolbelt_store::StoreError> {
        if self.has_tokens() {
            return Ok(true);
        }
        match &self.store {
            Some(store) => Ok(store
                .tokens()
                .list()
                .await?
                .iter()
                .any(|t| t.revoked_at.is_none())),
            None => Ok(false),
        }
    }

    /// Adds a token that reaches every agent by its hash.
    pub fn insert_hash(&self, hash: String, name: &str, scopes: Vec<Scope>) {
        self.insert(
            hash,
            Principal {
                name: name.to_owned(),
                scopes,
                access: AgentAccess::All,
            },
        );
    }

    /// Adds a token by its hash.
    pub fn insert(&self, hash: String, principal: Principal) {
        self.by_hash
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .insert(hash, principal);
    }

    /// Forgets a token by its hash; true when it was known.
    pub fn remove_hash(&self, hash: &str) -> bool {
        self.by_hash
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .remove(hash)
            .is_some()
    }

    /// Whether any token is known.
    pub fn has_tokens(&self) -> bool {
        !self
            .by_hash
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .is_empty()
    }

    /// Whether authentication is off.
    pub fn is_dev(&self) -> bool {
        self.dev
    }

    /// Who holds the `Authorization` header value `header`, if anyone.
    ///
    /// # Errors
    /// 401 `missing_token` / `invalid_token`.
    pub async fn authenticate(&self, header: Option<&str>) -> Result<Principal, Problem> {
        if self.dev {
            return Ok(Principal {
                name: "dev".to_owned(),
                scopes: vec![Scope::Admin],
                access: AgentAccess::All,
            });
        }
        let Some(value) = header else {
            return Err(unauthorized(
                "missing_token",
                "this endpoint needs `Authorization: Bearer <token>`",
            ));
        };
        let token = bearer_token(value).ok_or_else(|| {
            unauthorized(
                "invalid_token",
                "the Authorization header must be `Bearer <token>`",
            )
        })?;
        let hash = hash_token(token);
        if let Some(p) = self
            .by_hash
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .get(&hash)
        {
            return Ok(p.clone());
        }
        let Some(store) = &self.store else {
            return Err(unauthorized(
                "invalid_token",
                "the token is unknown or revoked",
            ));
        };
        if let Some((p, at)) = self
            .verified
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .get(&hash)
            && at.elapsed() < STORE_TOKEN_TTL
        {
            return Ok(p.clone());
        }
        let record = store
            .tokens()
            .verify(token)
            .await
            .map_err(Problem::internal)?
            .ok_or_else(|| unauthorized("invalid_token", "the token is unknown or revoked"))?;
        let principal = Principal {
            name: record.name.clone(),
            scopes: record
                .scopes
                .iter()
                .filter_map(|s| match s.as_str() {
                    "read" => Some(Scope::Read),
                    "run" => Some(Scope::Run),
                    "admin" => Some(Scope::Admin),
                    _ => None,
                })
                .collect(),
            access: AgentAccess::from_list(record.agents.clone()),
        };
        self.verified
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .insert(hash, (principal.clone(), std::time::Instant::now()));
        Ok(principal)
    }

    /// The hash of the token in the `Authorization` value `header` when the token is known
    /// (configured, or verified against the store within [`STORE_TOKEN_TTL`]); what the rate
    /// limiter keys a token's budget on. `None` for an unknown, malformed or missing token,
    /// and in development mode.
    pub(crate) fn known_hash(&self, header: &str) -> Option<String> {
        if self.dev {
            return None;
        }
        let hash = hash_token(bearer_token(header)?);
        let configured = self
            .by_hash
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .contains_key(&hash);
        let verified = || {
            self.verified
                .read()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .get(&hash)
                .is_some_and(|(_, at)| at.elapsed() < STORE_TOKEN_TTL)
        };
        (configured || verified()).then_some(hash)
    }
}

/// The token of an `Authorization: Bearer <token>` value: the scheme in any case, any
/// whitespace around the token (so one token has one spelling for the rate limiter too).
fn bearer_token(value: &str) -> Option<&str> {
    let value = value.trim();
    let (scheme, token) = value.split_once(|c: char| c.is_ascii_whitespace())?;
    let token = token.trim();
    (scheme.eq_ignore_ascii_case("bearer") && !token.is_empty()).then_some(token)
}

fn unauthorized(code: &str, detail: &str) -> Problem {
    Problem::new(StatusCode::UNAUTHORIZED, code, detail)
}
