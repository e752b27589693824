//! The checks every request passes before routing: [`AllowedHosts`] (the DNS-rebinding
//! guard), the `Origin` of state-changing requests, and the media type of request bodies.
//!
//! A browser page on another site can make the browser send requests here: through DNS
//! rebinding (its own name resolving to 127.0.0.1, so the browser treats the answers as its
//! own) or as a "simple" cross-site request, which browsers send without asking first when
//! its content type is a form or `text/plain` and it carries no custom header. Refusing
//! foreign `Host` names, foreign origins on requests that change state, bodies that are not
//! JSON, and body-less `POST`s without a custom header leaves such a page nothing to send.

use axum::extract::{Request, State};
use axum::http::{HeaderMap, Method, StatusCode, Uri, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use crate::config::ServerConfig;
use crate::problem::Problem;

/// The header a client without a token or a body may send to mark a `POST` as not coming
/// from a cross-site form (browsers send it only after a CORS preflight).
pub(crate) const REQUESTED_WITH: &str = "x-requested-with";

/// Host names (and `name:port`) the server answers to.
#[derive(Debug, Clone)]
pub(crate) struct AllowedHosts {
    /// Lower-case names, brackets of IPv6 literals removed, with an optional port.
    entries: Vec<(String, Option<u16>)>,
    any: bool,
}

impl AllowedHosts {
    /// Loopback names, the listening address, the host of `public_url`, `allowed_hosts` and
    /// `mcp_hosts`.
    pub(crate) fn from_config(config: &ServerConfig) -> Self {
        let mut names: Vec<String> = ["localhost", "127.0.0.1", "::1"]
            .into_iter()
            .map(str::to_owned)
            .collect();
        names.push(config.addr.ip().to_string());
        names.push(config.addr.to_string());
        if let Some(url) = &config.public_url
            && let Ok(uri) = url.parse::<Uri>()
            && let Some(authority) = uri.authority()
        {
            names.push(authority.as_str().to_owned());
        }
        names.extend(config.allowed_hosts.iter().cloned());
        names.extend(config.mcp_hosts.iter().cloned());
        let wildcard = names.iter().any(|n| n.trim() == "*");
        if wildcard && config.dev {
            tracing::warn!(
                "allowed_hosts = [\"*\"] is ignored in dev mode: without tokens, any web page could reach the server through DNS rebinding"
            );
        }
        Self {
            entries: names.iter().filter_map(|n| parse_authority(n)).collect(),
            any: wildcard && !config.dev,
        }
    }

    /// The names as rmcp's own DNS-rebinding check takes them (empty: any host).
    pub(crate) fn for_rmcp(&self) -> Vec<String> {
        if self.any {
            return Vec::new();
        }
        self.entries
            .iter()
            .map(|(host, port)| {
                let host = if host.contains(':') {
                    format!("[{host}]")
                } else {
                    host.clone()
                };
                match port {
                    Some(port) => format!("{host}:{port}"),
                    None => host,
                }
            })
            .collect()
    }

    fn allows(&self, host: &str, port: Option<u16>) -> bool {
        self.any
            || self
                .entries
                .iter()
                .any(|(name, p)| name == host && p.is_none_or(|p| Some(p) == port))
    }
}

/// `name[:port]` as a lower-case name without IPv6 brackets and a port.
fn parse_authority(text: &str) -> Option<(String, Option<u16>)> {
    let text = text.trim();
    if text.is_empty() || text == "*" {
        return None;
    }
    let (host, port) = match text.parse::<axum::http::uri::Authority>() {
        Ok(a) => (a.host().to_owned(), a.port_u16()),
        // A bare IPv6 address (`::1`) is not an authority.
        Err(_) => (text.to_owned(), None),
    };
    let host = host.trim_matches(['[', ']']).to_ascii_lowercase();
    Some((host, port))
}

/// What the guard needs from the configuration, built once.
#[derive(Debug, Clone)]
pub(crate) struct Guard {
    hosts: AllowedHosts,
    /// `cors_origins`, lower-case without a trailing slash; `None` when `*` allows any.
    origins: Option<Vec<String>>,
}

impl Guard {
    pub(crate) fn from_config(config: &ServerConfig) -> Self {
        let any_origin = config.cors_origins.iter().any(|o| o.trim() == "*");
        Self {
            hosts: AllowedHosts::from_config(config),
            origins: (!any_origin).then(|| {
                config
                    .cors_origins
                    .iter()
                    .map(|o| o.trim().trim_end_matches('/').to_ascii_lowercase())
                    .collect()
            }),
        }
    }

    /// The first rule `req` breaks, as the problem to answer with.
    fn check(&self, method: &Method, uri: &Uri, headers: &HeaderMap) -> Result<(), Problem> {
        let host = headers
            .get(header::HOST)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned)
            .or_else(|| uri.authority().map(|a| a.as_str().to_owned()))
            .ok_or_else(|| {
                Problem::bad_request("missing_host", "the request has no `Host` header")
            })?;
        let Some((name, port)) = parse_authority(&host) else {
            return Err(Problem::bad_request(
                "bad_host",
                format!("the `Host` header `{host}` is not a host name"),
            ));
        };
        if !self.hosts.allows(&name, port) {
            return Err(Problem::new(
                StatusCode::FORBIDDEN,
                "host_not_allowed",
                format!(
                    "this server does not answer to the host `{host}` (a guard against DNS \
                     rebinding); add it to `allowed_hosts` in toolbelt.toml if clients reach \
                     the server by that name"
                ),
            )
            .with_pointer("Host"));
        }
        let changes_state = matches!(
            *method,
            Method::POST | Method::PUT | Method::PATCH | Method::DELETE
        );
        if !changes_state {
            return Ok(());
        }
        if let Some(origin) = headers.get(header::ORIGIN) {
            let origin = origin.to_str().unwrap_or("(not text)");
            if !self.origin_allowed(origin, &host) {
                return Err(Problem::new(
                    StatusCode::FORBIDDEN,
                    "foreign_origin",
                    format!(
                        "a {method} from the page origin `{origin}` is refused: it is not this \
                         server and not in `cors_origins`"
                    ),
                )
                .with_pointer("Origin"));
            }
        }
        if *method == Method::DELETE {
            // Browsers never send a cross-site DELETE without a preflight.
            return Ok(());
        }
        let content_type = headers
            .get(header::CONTENT_TYPE)
            .map(|v| v.to_str().unwrap_or("(not text)"));
        let is_json = content_type.is_some_and(is_json);
        if has_body(headers) {
            if !is_json {
                let given = content_type.unwrap_or("none");
                return Err(Problem::new(
                    StatusCode::UNSUPPORTED_MEDIA_TYPE,
                    "unsupported_media_type",
                    format!(
                        "a {method} body must be JSON with `Content-Type: application/json`, \
                         not `{given}`"
                    ),
                )
                .with_pointer("Content-Type"));
            }
        } else if !is_json
            && !headers.contains_key(header::AUTHORIZATION)
            && !headers.contains_key(REQUESTED_WITH)
        {
            return Err(Problem::new(
                StatusCode::UNSUPPORTED_MEDIA_TYPE,
                "unsupported_media_type",
                format!(
                    "a {method} without a body needs `Content-Type: application/json`, an \
                     `Authorization` header or `X-Requested-With` (so that a cross-site form \
                     cannot send it)"
                ),
            )
            .with_pointer("Content-Type"));
        }
        Ok(())
    }

    fn origin_allowed(&self, origin: &str, host: &str) -> bool {
        let origin = origin.trim().trim_end_matches('/').to_ascii_lowercase();
        let Some(origins) = &self.origins else {
            return true;
        };
        if origins.contains(&origin) {
            return true;
        }
        // Same origin: the page was served by this server under the name it used.
        let Some((scheme, authority)) = origin.split_once("://") else {
            return false;
        };
        let host = host.to_ascii_lowercase();
        let default_port = match scheme {
            "http" => ":80",
            "https" => ":443",
            _ => return false,
        };
        authority == host || format!("{authority}{default_port}") == host
    }
}

/// Whether `content_type` is JSON (`application/json` or `application/*+json`).
pub(crate) fn is_json(content_type: &str) -> bool {
    let ct = content_type
        .split(';')
        .next()
        .unwrap_or_default()
        .trim()
        .to_ascii_lowercase();
    ct == "application/json" || (ct.starts_with("application/") && ct.ends_with("+json"))
}

fn has_body(headers: &HeaderMap) -> bool {
    if headers.contains_key(header::TRANSFER_ENCODING) {
        return true;
    }
    headers
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.trim() != "0")
}

/// Middleware: refuses a request that breaks one of the rules above.
pub(crate) async fn check(State(guard): State<Guard>, req: Request, next: Next) -> Response {
    match guard.check(req.method(), req.uri(), req.headers()) {
        Ok(()) => next.run(req).await,
        Err(problem) => problem.into_response(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn guard(edit: impl FnOnce(&mut ServerConfig)) -> Guard {
        let mut config = ServerConfig::default();
        edit(&mut config);
        Guard::from_config(&config)
    }

    fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (name, value) in pairs {
            map.insert(*name, value.parse().unwrap());
        }
        map
    }

    fn code(result: Result<(), Problem>) -> String {
        result.map_or_else(|p| p.code.clone(), |()| "ok".to_owned())
    }

    #[test]
    fn hosts_match_by_name_or_name_and_port() {
        let g = guard(|c| c.allowed_hosts = vec!["api.example".into(), "x.example:9".into()]);
        let get = |host: &str| {
            code(g.check(
                &Method::GET,
                &Uri::from_static("/"),
                &headers(&[("host", host)]),
            ))
        };
        assert_eq!(get("API.example:443"), "ok");
        assert_eq!(get("localhost:7878"), "ok");
        assert_eq!(get("[::1]:7878"), "ok");
        assert_eq!(get("x.example:9"), "ok");
        assert_eq!(get("x.example:10"), "host_not_allowed");
        assert_eq!(get("attacker.example"), "host_not_allowed");
    }

    #[test]
    fn a_wildcard_host_list_turns_the_check_off_except_in_dev_mode() {
        let get = |g: &Guard| {
            let h = headers(&[("host", "attacker.example")]);
            code(g.check(&Method::GET, &Uri::from_static("/"), &h))
        };
        assert_eq!(get(&guard(|c| c.allowed_hosts = vec!["*".into()])), "ok");
        let dev = guard(|c| {
            c.dev = true;
            c.allowed_hosts = vec!["*".into()];
        });
        assert_eq!(get(&dev), "host_not_allowed");
    }

    #[test]
    fn a_same_origin_page_may_post_and_a_listed_one_too() {
        let g = guard(|c| c.cors_origins = vec!["https://ui.example".into()]);
        let post = |origin: &str| {
            let h = headers(&[
                ("host", "localhost:7878"),
                ("origin", origin),
                ("content-type", "application/json"),
            ]);
            code(g.check(&Method::POST, &Uri::from_static("/"), &h))
        };
        assert_eq!(post("http://localhost:7878"), "ok");
        assert_eq!(post("https://ui.example/"), "ok");
        assert_eq!(post("null"), "foreign_origin");
        assert_eq!(post("http://localhost:9999"), "foreign_origin");
    }

    #[test]
    fn json_media_types() {
        assert!(is_json("application/json; charset=utf-8"));
        assert!(is_json("Application/Merge-Patch+JSON"));
        assert!(!is_json("text/plain"));
        assert!(!is_json("application/x-www-form-urlencoded"));
    }
}
