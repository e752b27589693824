//! Catalogs as they come: every shape loads, Python-ish types are mapped,
//! problems become warnings (or errors under `--strict`), bad lines are named.

use pretty_assertions::assert_eq;
use serde_json::{Value, json};
use toolbelt_router::{CatalogOptions, load_catalog, read_catalog};

fn load(text: &str) -> Result<usize, String> {
    read_catalog(text.as_bytes())
        .map(|s| s.len())
        .map_err(|e| e.to_string())
}

fn lenient(text: &str) -> toolbelt_router::Catalog {
    load_catalog(text, CatalogOptions::lenient()).unwrap()
}

fn names(c: &toolbelt_router::Catalog) -> Vec<&str> {
    c.specs.iter().map(|s| s.name.as_str()).collect()
}

const OK: &str = r#"{"name": "a", "description": "A tool", "parameters": {"type": "object"}}"#;

#[test]
fn loads_tools_and_skips_blank_lines() {
    let text = format!(
        "{OK}\n\n{}\n",
        r#"{"name": "b", "description": "B", "parameters": {"type": "object"}, "tags": ["x"]}"#
    );
    assert_eq!(load(&text), Ok(2));
}

#[test]
fn strict_rejects_duplicate_names_with_both_places() {
    assert_eq!(
        load(&format!("{OK}\n{OK}\n")),
        Err("catalog line 2: duplicate tool name `a` (first defined at line 1)".to_owned())
    );
}

#[test]
fn bad_lines_are_named() {
    let err = load(&format!("{OK}\nnot json\n")).unwrap_err();
    assert!(err.starts_with("catalog line 2: expected ident"), "{err}");
    let err = load(r#"{"name": "a,b", "description": "d"}"#).unwrap_err();
    assert!(
        err.starts_with("catalog document: invalid tool name \"a,b\""),
        "{err}"
    );
    let err = load(r#"{"name": "x"}"#).unwrap_err();
    assert!(err.contains("document: `x`: no description"), "{err}");
    // Lenient loading refuses text that is not JSON too, naming the line.
    let err = load_catalog(&format!("{OK}\n{{oops\n"), CatalogOptions::lenient()).unwrap_err();
    assert!(err.to_string().starts_with("catalog line 2: "), "{err}");
}

#[test]
fn every_shape_loads_as_json_lines() {
    let lines = [
        json!({"name": "bare_tool", "description": "Bare", "parameters": {"type": "object", "properties": {"q": {"type": "string"}}}}),
        json!({"type": "function", "function": {"name": "openai_tool", "description": "OpenAI", "parameters": {"type": "object", "properties": {}}}}),
        json!({"type": "function", "name": "responses_tool", "description": "OpenAI Responses", "parameters": {"type": "object"}}),
        json!({"name": "anthropic_tool", "description": "Anthropic", "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}),
        json!({"name": "mcp_tool", "description": "MCP", "inputSchema": {"type": "object", "properties": {"path": {"type": "string"}}}}),
        json!({"jsonrpc": "2.0", "id": 1, "result": {"tools": [
            {"name": "listed_one", "description": "From tools/list", "inputSchema": {"type": "object"}},
            {"name": "listed_two", "title": "Listed two", "inputSchema": {"type": "object"}}
        ]}}),
    ];
    let text: String = lines.iter().map(|l| format!("{l}\n")).collect();
    let catalog = lenient(&text);
    assert_eq!(
        names(&catalog),
        [
            "bare_tool",
            "openai_tool",
            "responses_tool",
            "anthropic_tool",
            "mcp_tool",
            "listed_one",
            "listed_two"
        ]
    );
    let r = &catalog.report;
    assert_eq!(r.format, "JSON Lines");
    assert_eq!(r.shapes.get("bare"), Some(&1));
    assert_eq!(r.shapes.get("openai"), Some(&2));
    assert_eq!(r.shapes.get("anthropic"), Some(&1));
    assert_eq!(r.shapes.get("mcp"), Some(&3));
    // The anthropic schema is kept as written.
    assert_eq!(
        catalog.specs[3].parameters["required"],
        json!(["city"]),
        "input_schema is the parameters"
    );
    // The MCP tool without a description gets its title, with a warning.
    assert_eq!(catalog.specs[6].description, "Listed two");
    assert_eq!(r.missing_descriptions.len(), 1);
    assert_eq!(r.missing_descriptions[0].at, "line 6, result, tools[1]");
}

#[test]
fn json_documents_arrays_and_tool_lists_load() {
    let array = json!([
        {"name": "one", "description": "One", "parameters": {"type": "object"}},
        {"type": "function", "function": {"name": "two", "description": "Two", "parameters": {"type": "object"}}}
    ]);
    let c = lenient(&serde_json::to_string_pretty(&array).unwrap());
    assert_eq!(c.report.format, "JSON");
    assert_eq!(names(&c), ["one", "two"]);

    let wrapped = json!({"tools": [{"name": "three", "description": "Three", "input_schema": {"type": "object"}}]});
    assert_eq!(names(&lenient(&wrapped.to_string())), ["three"]);

    let gemini = json!({"functionDeclarations": [{"name": "four", "description": "Four", "parameters": {"type": "object"}}]});
    assert_eq!(names(&lenient(&gemini.to_string())), ["four"]);

    // A request line carrying its functions (`{"question": ..., "function": [...]}`).
    let request = json!({"id": "x", "question": "hi", "function": [{"name": "five", "description": "Five", "parameters": {"type": "dict", "properties": {}}}]});
    assert_eq!(names(&lenient(&request.to_string())), ["five"]);
}

#[test]
fn python_types_are_mapped_and_names_kept() {
    let line = json!({
        "name": "math.factorial",
        "description": "Calculate the factorial of a number.",
        "parameters": {"type": "dict", "properties": {
            "number": {"type": "integer", "description": "The number"},
            "scale": {"type": "float"},
            "point": {"type": "tuple", "items": {"type": "float"}},
            "options": {"type": "dict", "properties": {"x": {"type": "any"}, "y": {"type": "String"}}},
            "tags": {"type": "list", "items": {"type": "str"}},
            "mode": {"type": "banana"}
        }, "required": ["number"]}
    });
    let second = json!({"name": "geo/distance v2: km", "description": "Distance", "parameters": {"type": "dict", "properties": {"a": {"type": "Tuple[float, float]"}}}});
    let c = lenient(&format!("{line}\n{second}\n"));
    assert_eq!(names(&c), ["math.factorial", "geo/distance v2: km"]);
    let p = &c.specs[0].parameters;
    assert_eq!(p["type"], "object");
    assert_eq!(p["properties"]["number"]["type"], "integer");
    assert_eq!(p["properties"]["scale"]["type"], "number");
    assert_eq!(p["properties"]["point"]["type"], "array");
    assert_eq!(p["properties"]["point"]["items"]["type"], "number");
    assert_eq!(p["properties"]["options"]["type"], "object");
    assert_eq!(
        p["properties"]["options"]["properties"]["x"].get("type"),
        None
    );
    assert_eq!(
        p["properties"]["options"]["properties"]["y"]["type"],
        "string"
    );
    assert_eq!(p["properties"]["tags"]["items"]["type"], "string");
    assert_eq!(p["properties"]["mode"].get("type"), None::<&Value>);
    assert_eq!(c.specs[1].parameters["properties"]["a"]["type"], "array");
    let r = &c.report;
    assert_eq!(r.types_mapped.get("dict → object"), Some(&3));
    assert_eq!(r.types_mapped.get("float → number"), Some(&2));
    assert_eq!(r.types_mapped.get("tuple → array"), Some(&1));
    assert_eq!(r.types_mapped.get("any → any"), Some(&1));
    assert_eq!(r.types_dropped.get("banana"), Some(&1));
    assert_eq!(r.provider_unsafe_names, 2);
    let summary = r.summary();
    assert!(
        summary.starts_with("catalog: 2 tools loaded from JSON Lines (2 bare)"),
        "{summary}"
    );
    assert!(summary.contains("dict → object ×3"), "{summary}");
    assert!(
        summary.contains("unknown types dropped (any value accepted): banana ×1"),
        "{summary}"
    );
    // Strict loading refuses the same line at its root type.
    let err = load_catalog(&line.to_string(), CatalogOptions::strict()).unwrap_err();
    assert!(
        err.to_string()
            .contains("must be \"object\", found \"dict\""),
        "{err}"
    );
}

#[test]
fn duplicates_missing_descriptions_and_empty_schemas_are_warnings() {
    let text = [
        json!({"name": "a", "description": "First", "parameters": {"type": "object"}}),
        json!({"name": "a", "description": "Second", "parameters": {"type": "object"}}),
        json!({"name": "a", "description": "First", "parameters": {"type": "object"}}),
        json!({"name": "get_user.profile", "parameters": {}}),
        json!({"name": "c", "description": "C"}),
        json!({"name": "d", "description": "D", "parameters": {"properties": {"x": {"type": "string"}}, "required": "x"}, "tags": ["ok", "not ok!"]}),
        json!({"description": "no name"}),
        json!({"name": "x".repeat(129), "description": "too long"}),
    ]
    .iter()
    .map(|v| format!("{v}\n"))
    .collect::<String>();
    let c = lenient(&text);
    assert_eq!(names(&c), ["a", "get_user.profile", "c", "d"]);
    assert_eq!(c.specs[0].description, "First");
    assert_eq!(c.specs[1].description, "get user profile");
    assert_eq!(c.specs[3].parameters["type"], "object");
    assert_eq!(c.specs[3].parameters.get("required"), None);
    assert_eq!(c.specs[3].tags, ["ok"]);
    let r = &c.report;
    let dup: Vec<&str> = r.duplicates.iter().map(|n| n.message.as_str()).collect();
    assert_eq!(
        dup,
        [
            "differs from the definition at line 1, which is kept",
            "repeats the definition at line 1"
        ]
    );
    assert_eq!(r.missing_descriptions.len(), 1);
    let empty: Vec<&str> = r.empty_schemas.iter().map(|n| n.at.as_str()).collect();
    assert_eq!(empty, ["line 4", "line 5"]);
    assert_eq!(r.schema_repairs.len(), 2, "{:?}", r.schema_repairs);
    assert_eq!(r.tags_dropped.len(), 1);
    let skipped: Vec<(&str, &str)> = r
        .skipped
        .iter()
        .map(|n| (n.at.as_str(), n.message.as_str()))
        .collect();
    assert_eq!(skipped[0], ("line 7", "missing field `name`"));
    assert_eq!(skipped[1].0, "line 8");
    assert!(skipped[1].1.contains("128"), "{}", skipped[1].1);
    assert!(!r.is_clean());
    let summary = r.summary();
    assert!(
        summary.contains("duplicate names (first kept): 2"),
        "{summary}"
    );
    assert!(summary.contains("entries skipped: 2"), "{summary}");
}

#[test]
fn a_broken_json_document_is_named_by_line_and_column() {
    let text = "[\n  {\"name\": \"a\", \"description\": \"A\"},\n  {\"name\": \"b\" \"description\": \"B\"}\n]\n";
    let err = load_catalog(text, CatalogOptions::lenient())
        .unwrap_err()
        .to_string();
    assert!(
        err.starts_with("catalog document: expected `,` or `}` at line 3 column"),
        "{err}"
    );
}

#[test]
fn an_empty_catalog_is_an_error() {
    let err = load_catalog("[]", CatalogOptions::lenient()).unwrap_err();
    assert_eq!(err.to_string(), "the catalog holds no tool");
}

/// The `tools/list` responses of real MCP servers from npm (`python3 eval/mcp_catalogs.py`).
#[test]
fn real_mcp_tool_lists_load() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/eval/mcp");
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .map(|d| {
            d.filter_map(Result::ok)
                .map(|e| e.path())
                .filter(|p| p.to_string_lossy().ends_with(".tools.json"))
                .collect()
        })
        .unwrap_or_default();
    if files.is_empty() {
        println!(
            "skipped: no MCP tool lists in {} (run python3 eval/mcp_catalogs.py)",
            dir.display()
        );
        return;
    }
    files.sort();
    let mut loaded = 0;
    for path in files {
        let text = std::fs::read_to_string(&path).unwrap();
        let raw: Value = serde_json::from_str(&text).unwrap();
        let listed = raw["result"]["tools"].as_array().unwrap().len();
        let catalog = load_catalog(&text, CatalogOptions::lenient()).unwrap();
        assert_eq!(catalog.specs.len(), listed, "{}", path.display());
        assert_eq!(
            catalog.report.shapes.get("mcp"),
            Some(&listed),
            "{}",
            path.display()
        );
        assert!(
            catalog.report.skipped.is_empty(),
            "{}: {:?}",
            path.display(),
            catalog.report.skipped
        );
        for (spec, tool) in catalog
            .specs
            .iter()
            .zip(raw["result"]["tools"].as_array().unwrap())
        {
            assert_eq!(spec.name.as_str(), tool["name"].as_str().unwrap());
            assert_eq!(spec.parameters["type"], "object");
        }
        loaded += listed;
    }
    assert!(loaded > 0);
}
