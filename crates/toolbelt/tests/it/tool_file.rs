//! The tool file format (`toolbelt tools add -f`): what a file declares reaches the built tool.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use pretty_assertions::assert_eq;
use serde_json::json;
use toolbelt::stored::ToolFile;
use toolbelt_tools::declarative::Secrets;

#[test]
fn a_tool_files_read_only_effect_keeps_a_command_tool_read_only() {
    let policy_of = |effect: &str| {
        let yaml = format!("name: ls_tool\ndescription: List\n{effect}command:\n  argv: [ls]\n");
        let def = ToolFile::parse(&yaml).unwrap().to_def().unwrap();
        let definition = def.definition.clone().unwrap();
        let tool = toolbelt_tools::declarative::Definition::from_value(&definition)
            .and_then(|d| d.build(def.spec, Secrets::default()))
            .unwrap();
        (
            definition["command"]["read_only"].clone(),
            tool.spec().policy.is_read_only(),
        )
    };
    assert_eq!(policy_of("effect: read_only\n"), (json!(true), true));
    assert_eq!(policy_of(""), (serde_json::Value::Null, false));
}
