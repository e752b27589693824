//! Hand-written `Tool` impls and `FnTool` closures produce the same spec.

use pretty_assertions::assert_eq;
use serde_json::{Value, json};
use toolbelt_core::{
    FnTool, Registry, Tool, ToolContext, ToolError, ToolOutput, ToolSpec, schema_for,
};

/// Add two integers.
#[derive(serde::Deserialize, schemars::JsonSchema)]
struct AddArgs {
    /// The first addend.
    a: i64,
    /// The second addend.
    b: i64,
}

struct Add;

impl Tool for Add {
    fn spec(&self) -> ToolSpec {
        ToolSpec::builder("add")
            .description("Add two integers")
            .tag("math")
            .parameters(schema_for::<AddArgs>())
            .build()
            .unwrap()
    }

    async fn call(&self, args: Value, _ctx: ToolContext) -> Result<ToolOutput, ToolError> {
        let args: AddArgs = toolbelt_core::parse_args(args)?;
        Ok(ToolOutput::json(json!(args.a + args.b)))
    }
}

#[test]
fn hand_written_and_closure_tools_have_equal_specs() {
    let closure = FnTool::builder("add")
        .description("Add two integers")
        .tag("math")
        .typed(|args: AddArgs, _ctx| async move { Ok::<_, ToolError>(args.a + args.b) })
        .unwrap();
    assert_eq!(closure.spec(), &Add.spec());
}

#[test]
fn derived_schema_carries_doc_comments_and_required() {
    assert_eq!(
        schema_for::<AddArgs>(),
        json!({
            "type": "object",
            "description": "Add two integers.",
            "properties": {
                "a": {"type": "integer", "format": "int64", "description": "The first addend."},
                "b": {"type": "integer", "format": "int64", "description": "The second addend."}
            },
            "required": ["a", "b"]
        })
    );
}

#[test]
fn registry_accepts_any_tool_and_lists_by_tag() {
    let registry = Registry::new();
    registry.add_tool(Add).unwrap();
    let err = registry.add_tool(Add).unwrap_err();
    assert_eq!(
        err.to_string(),
        "a tool named `add` is already registered (version 1.0.0); remove it first or use `replace`"
    );
    assert_eq!(registry.tools_by_tag("math").len(), 1);
    assert_eq!(registry.tags(), vec![("math".to_owned(), 1)]);
}
