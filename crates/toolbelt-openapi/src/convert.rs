//! [`convert`]: an OpenAPI document to HTTP tool drafts, one per selected operation.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use oas3::spec::{
    Info, Operation, Parameter, ParameterIn, RequestBody, SecurityRequirement, SecurityScheme,
    Server,
};
use serde::Serialize;
use serde_json::{Map, Value, json};
use toolbelt_core::ToolSpec;
use toolbelt_tools::declarative::{Definition, secret_names};

use crate::document::{METHODS, escape, parse, resolve, typed};
use crate::error::ImportError;
use crate::schema::Inliner;

/// Longest description kept from an operation's summary and description, in bytes.
pub const MAX_DESCRIPTION: usize = 1024;

/// What to import and how to name it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct ImportOptions {
    /// Put before every tool name (and, upper-cased, before every secret name).
    pub prefix: String,
    /// Only operations carrying one of these tags (all when empty).
    pub tags: Vec<String>,
    /// Only these operations, each named by `operationId`, `METHOD /path` or tool name (all
    /// when empty).
    pub operations: Vec<String>,
    /// The URL requests go to, instead of the document's `servers`.
    pub base_url: Option<String>,
    /// Where the document was read from: relative server URLs are taken relative to it.
    pub source_url: Option<String>,
}

impl ImportOptions {
    /// Sets [`ImportOptions::prefix`].
    #[must_use]
    pub fn with_prefix(mut self, prefix: impl Into<String>) -> Self {
        self.prefix = prefix.into();
        self
    }

    /// Sets [`ImportOptions::tags`].
    #[must_use]
    pub fn with_tags(mut self, tags: impl IntoIterator<Item = impl Into<String>>) -> Self {
        self.tags = tags.into_iter().map(Into::into).collect();
        self
    }

    /// Sets [`ImportOptions::operations`].
    #[must_use]
    pub fn with_operations(mut self, ops: impl IntoIterator<Item = impl Into<String>>) -> Self {
        self.operations = ops.into_iter().map(Into::into).collect();
        self
    }

    /// Sets [`ImportOptions::base_url`].
    #[must_use]
    pub fn with_base_url(mut self, url: impl Into<String>) -> Self {
        self.base_url = Some(url.into());
        self
    }

    /// Sets [`ImportOptions::source_url`].
    #[must_use]
    pub fn with_source_url(mut self, url: impl Into<String>) -> Self {
        self.source_url = Some(url.into());
        self
    }
}

/// One operation as a tool: its spec and its `{"http": ...}` definition.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[non_exhaustive]
pub struct ImportedTool {
    /// `METHOD /path`.
    pub operation: String,
    /// The operation's JSON pointer in the document.
    pub pointer: String,
    /// Name, description, parameters, groups.
    pub spec: ToolSpec,
    /// The declarative definition, as stored.
    pub definition: Value,
}

/// A selected operation that did not become a tool, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct Skipped {
    /// `METHOD /path`, or the tool name.
    pub operation: String,
    /// Where in the document (empty when the reason is not the document's).
    pub pointer: String,
    /// Why.
    pub reason: String,
}

/// What a document gives.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[non_exhaustive]
pub struct Imported {
    /// `info.title`.
    pub title: String,
    /// `info.version`.
    pub version: String,
    /// The tools, in document order.
    pub tools: Vec<ImportedTool>,
    /// Selected operations left out.
    pub skipped: Vec<Skipped>,
    /// The secrets the tools' headers name (declare each as `TOOLBELT_SECRET_<NAME>`).
    pub secrets: Vec<String>,
}

/// Turns an OpenAPI 3.0 or 3.1 document (JSON or YAML text) into tool drafts.
///
/// An operation that cannot be a tool (a cookie parameter it requires, a body that is not
/// JSON, an API key only accepted in the query) is listed in [`Imported::skipped`] with the
/// JSON pointer of the cause; the others are imported.
///
/// # Errors
/// [`ImportError`] for a document that is not OpenAPI 3.0/3.1, a malformed `info`, `servers`
/// or `security`, no usable base URL, or an option that is not usable (a tag or operation
/// that names nothing).
pub fn convert(text: &str, options: &ImportOptions) -> Result<Imported, ImportError> {
    check_options(options)?;
    let (doc, _version) = parse(text)?;
    let info: Info = typed(doc.get("info").unwrap_or(&Value::Null), "/info")?;
    let mut converter = Converter {
        doc: &doc,
        options,
        title: info.title.clone(),
        inliner: Inliner::new(&doc),
        schemes: HashMap::new(),
        secrets: BTreeSet::new(),
        doc_servers: servers_at(&doc, "/servers")?,
        doc_security: match doc.get("security") {
            Some(v) => Some(typed::<Vec<SecurityRequirement>>(v, "/security")?),
            None => None,
        },
    };
    // A document-wide base URL that cannot be used fails the import rather than every
    // operation one by one.
    if options.base_url.is_none() {
        match converter.doc_servers.first() {
            Some((server, at)) => {
                converter.server_url(server, at)?;
            }
            None => {
                return Err(ImportError::at(
                    "/servers",
                    "the document names no server; give the base URL requests go to",
                ));
            }
        }
    }
    let mut tools: Vec<ImportedTool> = Vec::new();
    let mut skipped = Vec::new();
    let mut names: HashMap<String, String> = HashMap::new();
    let mut matched_ops = BTreeSet::new();
    let mut seen_tags = BTreeSet::new();
    let empty = Map::new();
    let paths = match doc.get("paths") {
        None => &empty,
        Some(Value::Object(paths)) => paths,
        Some(_) => return Err(ImportError::at("/paths", "must be an object")),
    };
    for (path, item) in paths {
        let item_at = format!("/paths/{}", escape(path));
        let (item, item_at) = match resolve(&doc, item, item_at.clone()) {
            Ok(found) => found,
            Err(e) => {
                skipped.push(skip(path.clone(), &e));
                continue;
            }
        };
        for method in METHODS {
            let Some(raw_op) = item.get(*method) else {
                continue;
            };
            let label = format!("{} {path}", method.to_uppercase());
            let op_at = format!("{item_at}/{method}");
            let name = tool_name(&options.prefix, raw_op, method, path);
            let op_tags: Vec<&str> = raw_op
                .get("tags")
                .and_then(Value::as_array)
                .map(|t| t.iter().filter_map(Value::as_str).collect())
                .unwrap_or_default();
            seen_tags.extend(op_tags.iter().map(|t| (*t).to_owned()));
            if !options.tags.is_empty()
                && !options.tags.iter().any(|t| op_tags.contains(&t.as_str()))
            {
                continue;
            }
            if !options.operations.is_empty() {
                let id = raw_op.get("operationId").and_then(Value::as_str);
                let hits: Vec<&String> = options
                    .operations
                    .iter()
                    .filter(|o| {
                        Some(o.as_str()) == id || **o == name || o.eq_ignore_ascii_case(&label)
                    })
                    .collect();
                if hits.is_empty() {
                    continue;
                }
                matched_ops.extend(hits.into_iter().cloned());
            }
            if let Some(first) = names.get(&name) {
                skipped.push(Skipped {
                    operation: label,
                    pointer: op_at,
                    reason: format!("its tool name `{name}` is already taken by {first}"),
                });
                continue;
            }
            match converter.operation(raw_op, item, &item_at, &op_at, method, path, &name) {
                Ok((spec, definition)) => {
                    names.insert(name, label.clone());
                    tools.push(ImportedTool {
                        operation: label,
                        pointer: op_at,
                        spec,
                        definition,
                    });
                }
                Err(e) => skipped.push(skip(label, &e)),
            }
        }
    }
    if let Some(tag) = options.tags.iter().find(|t| !seen_tags.contains(*t)) {
        return Err(ImportError::option(
            "tags",
            format!(
                "`{tag}` is no operation's tag; the document's tags: {}",
                list(seen_tags.iter())
            ),
        ));
    }
    if let Some(op) = options
        .operations
        .iter()
        .find(|o| !matched_ops.contains(*o))
    {
        return Err(ImportError::option(
            "operations",
            format!(
                "`{op}` names no selected operation (by operationId, `METHOD /path` or tool name)"
            ),
        ));
    }
    Ok(Imported {
        title: info.title,
        version: info.version,
        tools,
        skipped,
        secrets: converter.secrets.into_iter().collect(),
    })
}

fn skip(operation: String, error: &ImportError) -> Skipped {
    let reason = match error {
        ImportError::Document { reason, .. } | ImportError::Option { reason, .. } => reason.clone(),
    };
    Skipped {
        operation,
        pointer: error.pointer().unwrap_or_default().to_owned(),
        reason,
    }
}

fn list<'a>(items: impl Iterator<Item = &'a String>) -> String {
    let items: Vec<&str> = items.map(String::as_str).collect();
    if items.is_empty() {
        "none".to_owned()
    } else {
        items.join(", ")
    }
}

fn check_options(options: &ImportOptions) -> Result<(), ImportError> {
    if let Some(bad) = options
        .prefix
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.')))
    {
        return Err(ImportError::option(
            "prefix",
            format!("{bad:?} is not allowed; a prefix is ASCII letters, digits, `_`, `-` and `.`"),
        ));
    }
    for (option, url) in [
        ("base_url", &options.base_url),
        ("source_url", &options.source_url),
    ] {
        if let Some(url) = url {
            let parsed = url::Url::parse(url)
                .map_err(|e| ImportError::option(option, format!("`{url}` is not a URL: {e}")))?;
            if !matches!(parsed.scheme(), "http" | "https") {
                return Err(ImportError::option(
                    option,
                    format!("`{url}` must start with http:// or https://"),
                ));
            }
        }
    }
    Ok(())
}

/// `prefix` + the operation id (or method and path), with every character outside
/// `[A-Za-z0-9_-]` made `_`: names every LLM API accepts as they are.
fn tool_name(prefix: &str, op: &Value, method: &str, path: &str) -> String {
    let base = match op.get("operationId").and_then(Value::as_str) {
        Some(id) if !id.trim().is_empty() => identifier(id),
        _ => identifier(&format!("{method}_{path}")),
    };
    format!("{prefix}{base}")
}

/// `text` with runs of characters outside `[A-Za-z0-9_-]` made one `_`, trimmed of `_`.
fn identifier(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if c.is_ascii_alphanumeric() || c == '-' {
            out.push(c);
        } else if !out.ends_with('_') {
            out.push('_');
        }
    }
    let out = out.trim_matches('_');
    if out.is_empty() {
        "_".to_owned()
    } else {
        out.to_owned()
    }
}

/// A group name from a tag: characters outside `[A-Za-z0-9_.:-]` made `_`, at most 64.
fn group(tag: &str) -> Option<String> {
    let clean: String = tag
        .trim()
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.' | ':') {
                c
            } else {
                '_'
            }
        })
        .take(64)
        .collect();
    (!clean.is_empty()).then_some(clean)
}

fn servers_at(doc: &Value, at: &str) -> Result<Vec<(Server, String)>, ImportError> {
    let Some(value) = doc.pointer(at) else {
        return Ok(Vec::new());
    };
    let servers: Vec<Server> = typed(value, at)?;
    Ok(servers
        .into_iter()
        .enumerate()
        .map(|(i, s)| (s, format!("{at}/{i}")))
        .collect())
}

/// The state of one conversion.
struct Converter<'a> {
    doc: &'a Value,
    options: &'a ImportOptions,
    title: String,
    inliner: Inliner<'a>,
    schemes: HashMap<String, Result<SecurityScheme, ImportError>>,
    secrets: BTreeSet<String>,
    doc_servers: Vec<(Server, String)>,
    doc_security: Option<Vec<SecurityRequirement>>,
}

/// The request parts an operation's parameters fill.
#[derive(Default)]
struct Request {
    properties: Map<String, Value>,
    required: Vec<String>,
    path: HashMap<String, String>,
    query: BTreeMap<String, String>,
    headers: BTreeMap<String, String>,
    body: Option<String>,
}

impl Request {
    /// A fresh argument name for `name`: an identifier, numbered when taken.
    fn arg(&self, name: &str) -> String {
        let base = identifier(name);
        let mut arg = base.clone();
        let mut n = 2;
        while self.properties.contains_key(&arg) {
            arg = format!("{base}_{n}");
            n += 1;
        }
        arg
    }
}

impl Converter<'_> {
    #[allow(clippy::too_many_arguments)]
    fn operation(
        &mut self,
        raw: &Value,
        item: &Value,
        item_at: &str,
        at: &str,
        method: &str,
        path: &str,
        name: &str,
    ) -> Result<(ToolSpec, Value), ImportError> {
        let mut request = Request::default();
        // Path-level parameters first; an operation's own with the same name and place win.
        let mut params: Vec<(Parameter, Value, String)> = Vec::new();
        for (list, list_at) in [(item, item_at), (raw, at)] {
            let Some(Value::Array(items)) = list.get("parameters") else {
                continue;
            };
            for (i, value) in items.iter().enumerate() {
                let (value, p_at) = resolve(self.doc, value, format!("{list_at}/parameters/{i}"))?;
                let param: Parameter = typed(value, &p_at)?;
                params.retain(|(p, _, _)| !(p.name == param.name && p.location == param.location));
                params.push((param, value.clone(), p_at));
            }
        }
        for (param, value, p_at) in params {
            self.parameter(&mut request, &param, &value, &p_at)?;
        }
        if let Some(body) = raw.get("requestBody") {
            self.body(&mut request, body, &format!("{at}/requestBody"))?;
        }
        // Parameters and the body are read on their own first, so that an error in one
        // names its own field rather than the whole parameter list.
        let op: Operation = typed(raw, at)?;
        let url = format!(
            "{}{}",
            self.base(&op, item, item_at, at)?,
            self.path(&request, path, at)?
        );
        let security = if raw.get("security").is_some() {
            Some(op.security.clone())
        } else {
            self.doc_security.clone()
        };
        let security_at = if raw.get("security").is_some() {
            format!("{at}/security")
        } else {
            "/security".to_owned()
        };
        for (header, value) in self.auth(security.as_deref().unwrap_or_default(), &security_at)? {
            request.headers.insert(header, value);
        }
        let mut http = json!({"method": method.to_uppercase(), "url": url});
        if !request.query.is_empty() {
            http["query"] = json!(request.query);
        }
        if !request.headers.is_empty() {
            http["headers"] = json!(request.headers);
        }
        if let Some(arg) = &request.body {
            http["body"] = json!(format!("{{{{{arg}}}}}"));
        }
        let definition = json!({ "http": http });
        let mut parameters = json!({"type": "object", "properties": request.properties});
        if !request.required.is_empty() {
            parameters["required"] = json!(request.required);
        }
        parameters["additionalProperties"] = json!(false);
        let mut builder = ToolSpec::builder(name)
            .description(description(&op, method, path))
            .parameters(parameters)
            .tags(op.tags.iter().filter_map(|t| group(t)))
            .metadata(
                "openapi",
                json!({"document": self.title, "operation": format!("{} {path}", method.to_uppercase()),
                       "operation_id": op.operation_id}),
            );
        if !matches!(method, "get" | "head") {
            builder = builder.mutating();
        }
        let spec = builder
            .build()
            .map_err(|e| ImportError::at(at, format!("not a valid tool: {e}")))?;
        Definition::from_value(&definition)
            .and_then(|d| d.validate(&spec))
            .map_err(|e| ImportError::at(at, format!("not a valid HTTP tool: {e}")))?;
        Ok((spec, definition))
    }

    fn parameter(
        &mut self,
        request: &mut Request,
        param: &Parameter,
        raw: &Value,
        at: &str,
    ) -> Result<(), ImportError> {
        let required = param.required == Some(true) || param.location == ParameterIn::Path;
        match param.location {
            ParameterIn::Cookie if required => {
                return Err(ImportError::at(
                    at,
                    format!(
                        "the required cookie parameter `{}` cannot be sent by an HTTP tool",
                        param.name
                    ),
                ));
            }
            ParameterIn::Cookie => return Ok(()),
            // OpenAPI says these header parameters are ignored: the media types and the
            // security schemes set them.
            ParameterIn::Header
                if ["accept", "content-type", "authorization"]
                    .contains(&param.name.to_ascii_lowercase().as_str()) =>
            {
                return Ok(());
            }
            _ => {}
        }
        let (schema, schema_at) = match (raw.get("schema"), raw.get("content")) {
            (Some(schema), _) => (schema.clone(), format!("{at}/schema")),
            (None, Some(Value::Object(content))) => match content.iter().next() {
                Some((media, m)) => (
                    m.get("schema").cloned().unwrap_or_else(|| json!({})),
                    format!("{at}/content/{}/schema", escape(media)),
                ),
                None => (json!({}), at.to_owned()),
            },
            _ => (json!({}), at.to_owned()),
        };
        let (mut schema, _) = self.inliner.inline(&schema, &schema_at)?;
        if !schema.is_object() {
            schema = json!({});
        }
        if let (Some(text), Some(obj)) = (&param.description, schema.as_object_mut())
            && !obj.contains_key("description")
        {
            obj.insert("description".to_owned(), json!(text));
        }
        let arg = request.arg(&param.name);
        let template = format!("{{{{{arg}}}}}");
        match param.location {
            ParameterIn::Path => {
                request.path.insert(param.name.clone(), arg.clone());
            }
            ParameterIn::Query => {
                request.query.insert(param.name.clone(), template);
            }
            ParameterIn::Header => {
                request.headers.insert(param.name.clone(), template);
            }
            ParameterIn::Cookie => {}
        }
        if required {
            request.required.push(arg.clone());
        }
        request.properties.insert(arg, schema);
        Ok(())
    }

    fn body(&mut self, request: &mut Request, raw: &Value, at: &str) -> Result<(), ImportError> {
        let (raw, at) = resolve(self.doc, raw, at.to_owned())?;
        let body: RequestBody = typed(raw, &at)?;
        let media = body
            .content
            .keys()
            .find(|m| m.eq_ignore_ascii_case("application/json"))
            .or_else(|| {
                body.content
                    .keys()
                    .find(|m| m.to_ascii_lowercase().contains("json"))
            });
        let Some(media) = media else {
            if body.required == Some(true) {
                return Err(ImportError::at(
                    format!("{at}/content"),
                    format!(
                        "only JSON request bodies can be sent; this one is {}",
                        body.content.keys().cloned().collect::<Vec<_>>().join(", ")
                    ),
                ));
            }
            return Ok(());
        };
        let schema_at = format!("{at}/content/{}/schema", escape(media));
        let schema = raw
            .pointer(&format!("/content/{}/schema", escape(media)))
            .cloned()
            .unwrap_or_else(|| json!({}));
        let (mut schema, _) = self.inliner.inline(&schema, &schema_at)?;
        if !schema.is_object() {
            schema = json!({});
        }
        if let Some(obj) = schema.as_object_mut()
            && !obj.contains_key("description")
        {
            let text = body
                .description
                .clone()
                .unwrap_or_else(|| "The JSON request body".to_owned());
            obj.insert("description".to_owned(), json!(text));
        }
        let arg = request.arg("body");
        // The body is always sent (a tool's body template is), so the argument is required.
        request.required.push(arg.clone());
        request.properties.insert(arg.clone(), schema);
        request.body = Some(arg);
        Ok(())
    }

    /// `/pets/{petId}` → `/pets/{{petId}}`, each name mapped to its argument.
    fn path(&self, request: &Request, path: &str, at: &str) -> Result<String, ImportError> {
        let mut out = String::with_capacity(path.len() + 8);
        let mut rest = path;
        while let Some(open) = rest.find('{') {
            let Some(close) = rest[open..].find('}') else {
                return Err(ImportError::at(
                    at,
                    format!("`{path}` has a `{{` never closed"),
                ));
            };
            let name = &rest[open + 1..open + close];
            let Some(arg) = request.path.get(name) else {
                return Err(ImportError::at(
                    at,
                    format!("`{path}` uses `{{{name}}}`, which no path parameter declares"),
                ));
            };
            out.push_str(&rest[..open]);
            out.push_str(&format!("{{{{{arg}}}}}"));
            rest = &rest[open + close + 1..];
        }
        out.push_str(rest);
        Ok(out)
    }

    /// The base URL: the option, else the first server of the operation, its path or the
    /// document, with variables at their defaults, made absolute against the source URL.
    fn base(
        &self,
        op: &Operation,
        item: &Value,
        item_at: &str,
        op_at: &str,
    ) -> Result<String, ImportError> {
        if let Some(base) = &self.options.base_url {
            return Ok(base.trim_end_matches('/').to_owned());
        }
        let item_servers = servers_at(item, "/servers")?;
        let (server, at) = match (
            op.servers.first(),
            item_servers.first(),
            self.doc_servers.first(),
        ) {
            (Some(s), _, _) => (s.clone(), format!("{op_at}/servers/0")),
            (None, Some((s, at)), _) => (s.clone(), format!("{item_at}{at}")),
            (None, None, Some((s, at))) => (s.clone(), at.clone()),
            (None, None, None) => {
                return Err(ImportError::at("/servers", "the document names no server"));
            }
        };
        self.server_url(&server, &at)
    }

    /// `server`'s URL with variables at their defaults, made absolute against the source URL.
    fn server_url(&self, server: &Server, at: &str) -> Result<String, ImportError> {
        let mut url = server.url.clone();
        for (name, variable) in &server.variables {
            url = url.replace(&format!("{{{name}}}"), &variable.default);
        }
        let absolute = match url::Url::parse(&url) {
            Ok(u) => u,
            Err(_) => match self.options.source_url.as_deref().map(url::Url::parse) {
                Some(Ok(source)) => source.join(&url).map_err(|e| {
                    ImportError::at(
                        format!("{at}/url"),
                        format!("`{url}` cannot be joined to the document's URL: {e}"),
                    )
                })?,
                _ => {
                    return Err(ImportError::at(
                        format!("{at}/url"),
                        format!(
                            "the server URL `{url}` is relative; give the base URL requests go to"
                        ),
                    ));
                }
            },
        };
        if !matches!(absolute.scheme(), "http" | "https") {
            return Err(ImportError::at(
                format!("{at}/url"),
                format!("the server URL `{absolute}` is not http or https"),
            ));
        }
        Ok(absolute.as_str().trim_end_matches('/').to_owned())
    }

    /// Headers carrying the first security alternative that can be sent, each secret named
    /// `<PREFIX>_<SCHEME>`; none for no requirement or an empty (optional) one.
    fn auth(
        &mut self,
        requirements: &[SecurityRequirement],
        at: &str,
    ) -> Result<Vec<(String, String)>, ImportError> {
        let mut reasons = Vec::new();
        for requirement in requirements {
            let mut headers: Vec<(String, String)> = Vec::new();
            let mut cookies = Vec::new();
            let mut usable = true;
            for scheme_name in requirement.0.keys() {
                let secret = self.secret_name(scheme_name);
                let reference = format!("{{{{secret.{secret}}}}}");
                match self.scheme(scheme_name)? {
                    SecurityScheme::ApiKey { name, location, .. } if location == "header" => {
                        headers.push((name, reference));
                    }
                    SecurityScheme::ApiKey { name, location, .. } if location == "cookie" => {
                        cookies.push(format!("{name}={reference}"));
                    }
                    SecurityScheme::Http { scheme, .. }
                        if scheme.eq_ignore_ascii_case("bearer") =>
                    {
                        headers.push(("Authorization".to_owned(), format!("Bearer {reference}")));
                    }
                    SecurityScheme::Http { scheme, .. } if scheme.eq_ignore_ascii_case("basic") => {
                        headers.push(("Authorization".to_owned(), format!("Basic {reference}")));
                    }
                    SecurityScheme::OAuth2 { .. } | SecurityScheme::OpenIdConnect { .. } => {
                        headers.push(("Authorization".to_owned(), format!("Bearer {reference}")));
                    }
                    SecurityScheme::ApiKey { .. } => {
                        usable = false;
                        reasons.push(format!("`{scheme_name}` sends its key in the query, and secrets never go in URLs"));
                    }
                    SecurityScheme::Http { scheme, .. } => {
                        usable = false;
                        reasons.push(format!(
                            "`{scheme_name}` uses HTTP `{scheme}` authentication"
                        ));
                    }
                    SecurityScheme::MutualTls { .. } => {
                        usable = false;
                        reasons.push(format!("`{scheme_name}` is mutual TLS"));
                    }
                }
            }
            if !cookies.is_empty() {
                headers.push(("Cookie".to_owned(), cookies.join("; ")));
            }
            if usable {
                for (_, value) in &headers {
                    self.secrets
                        .extend(secret_names(value).into_iter().map(str::to_owned));
                }
                return Ok(headers);
            }
        }
        if requirements.is_empty() {
            return Ok(Vec::new());
        }
        Err(ImportError::at(
            at,
            format!(
                "no security alternative can be sent by an HTTP tool: {}",
                reasons.join("; ")
            ),
        ))
    }

    fn scheme(&mut self, name: &str) -> Result<SecurityScheme, ImportError> {
        let doc = self.doc;
        self.schemes
            .entry(name.to_owned())
            .or_insert_with(|| {
                let at = format!("/components/securitySchemes/{}", escape(name));
                let value = doc.pointer(&at).ok_or_else(|| {
                    ImportError::at(&at, format!("the security scheme `{name}` is not declared"))
                })?;
                let (value, at) = resolve(doc, value, at)?;
                typed(value, &at)
            })
            .clone()
    }

    fn secret_name(&self, scheme: &str) -> String {
        let prefix = self
            .options
            .prefix
            .trim_matches(|c| matches!(c, '_' | '-' | '.'));
        let joined = if prefix.is_empty() {
            scheme.to_owned()
        } else {
            format!("{prefix}_{scheme}")
        };
        identifier(&joined).replace('-', "_").to_ascii_uppercase()
    }
}

/// The summary and the description, or `METHOD /path`, cut to [`MAX_DESCRIPTION`] bytes.
fn description(op: &Operation, method: &str, path: &str) -> String {
    let parts: Vec<&str> = [op.summary.as_deref(), op.description.as_deref()]
        .into_iter()
        .flatten()
        .map(str::trim)
        .filter(|t| !t.is_empty())
        .collect();
    let mut text = if parts.is_empty() {
        format!("{} {path}", method.to_uppercase())
    } else if parts.len() == 2 && parts[1].starts_with(parts[0]) {
        parts[1].to_owned()
    } else {
        parts.join("\n\n")
    };
    if op.deprecated == Some(true) {
        text.insert_str(0, "Deprecated. ");
    }
    if text.len() > MAX_DESCRIPTION {
        let mut end = MAX_DESCRIPTION - 3;
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        text.truncate(end);
        text.push('…');
    }
    text
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use pretty_assertions::assert_eq;

    use super::*;

    #[test]
    fn names_are_identifiers_every_llm_api_accepts() {
        assert_eq!(identifier("repos/list-for-org"), "repos_list-for-org");
        assert_eq!(identifier("get_/pets/{petId}"), "get_pets_petId");
        assert_eq!(identifier("page[size]"), "page_size");
        assert_eq!(identifier("///"), "_");
        assert_eq!(
            secret_names("Bearer {{secret.A}} {{secret.B_1}}"),
            ["A", "B_1"]
        );
    }
}
