//! Parameter schemas derived from Rust types: structs, enums, Option, Vec, nesting, docs.

use pretty_assertions::assert_eq;
use serde::{Deserialize, Serialize};
use serde_json::json;
use toolbelt_core::{Json, Tool, schema_for};
use toolbelt_macros::tool;

/// A point on the plane.
#[derive(Deserialize, Serialize, schemars::JsonSchema)]
struct Point {
    /// Horizontal position.
    x: f64,
    /// Vertical position.
    y: f64,
}

/// How fast to go.
#[derive(Deserialize, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
enum Speed {
    /// Take the quick road.
    Fast,
    Slow,
}

/// A shape to draw.
#[derive(Deserialize, Serialize, schemars::JsonSchema)]
#[serde(tag = "type", rename_all = "snake_case")]
enum Shape {
    /// A circle around the origin.
    Circle { radius: f64 },
    /// A square with its corner at a point.
    Square { corner: Point, side: f64 },
}

/// A styled label.
#[derive(Deserialize, Serialize, schemars::JsonSchema)]
struct Label {
    text: String,
    style: Style,
}

/// Text style.
#[derive(Deserialize, Serialize, schemars::JsonSchema)]
struct Style {
    bold: bool,
    size: Option<u8>,
}

fn point_schema(description: &str) -> serde_json::Value {
    json!({
        "description": description,
        "type": "object",
        "properties": {
            "x": {"description": "Horizontal position.", "type": "number", "format": "double"},
            "y": {"description": "Vertical position.", "type": "number", "format": "double"}
        },
        "required": ["x", "y"]
    })
}

/// Plots a route.
#[tool]
async fn plot(
    /// Where to start.
    start: Point,
    /// The waypoints, in order.
    route: Vec<Point>,
) -> Json<(Point, Vec<Point>)> {
    Json((start, route))
}

#[test]
fn structs_vecs_and_parameter_docs() {
    let expected = json!({
        "type": "object",
        "additionalProperties": false,
        "properties": {
            "start": point_schema("Where to start."),
            "route": {
                "description": "The waypoints, in order.",
                "type": "array",
                "items": point_schema("A point on the plane.")
            }
        },
        "required": ["start", "route"]
    });
    assert_eq!(PlotTool.spec().parameters, expected);
}

/// Picks a speed and a shape.
#[tool]
async fn pick(speed: Speed, shape: Shape) -> Json<(Speed, Shape)> {
    Json((speed, shape))
}

#[test]
fn unit_and_data_enums() {
    let speed = json!({
        "description": "How fast to go.",
        "oneOf": [
            {"type": "string", "enum": ["slow"]},
            {"type": "string", "const": "fast", "description": "Take the quick road."}
        ]
    });
    let circle = json!({
        "description": "A circle around the origin.",
        "type": "object",
        "properties": {
            "type": {"type": "string", "const": "circle"},
            "radius": {"type": "number", "format": "double"}
        },
        "required": ["type", "radius"]
    });
    let square = json!({
        "description": "A square with its corner at a point.",
        "type": "object",
        "properties": {
            "type": {"type": "string", "const": "square"},
            "corner": point_schema("A point on the plane."),
            "side": {"type": "number", "format": "double"}
        },
        "required": ["type", "corner", "side"]
    });
    let expected = json!({
        "type": "object",
        "additionalProperties": false,
        "properties": {
            "speed": speed,
            "shape": {"description": "A shape to draw.", "oneOf": [circle, square]}
        },
        "required": ["speed", "shape"]
    });
    assert_eq!(PickTool.spec().parameters, expected);
}

/// Prints a label.
#[tool]
async fn print(label: Option<Label>, #[serde(default)] copies: u32) -> Json<(Option<Label>, u32)> {
    Json((label, copies))
}

#[test]
fn options_nested_structs_and_serde_defaults() {
    let style = json!({
        "description": "Text style.",
        "type": "object",
        "properties": {
            "bold": {"type": "boolean"},
            "size": {"type": ["integer", "null"], "format": "uint8", "minimum": 0, "maximum": 255}
        },
        "required": ["bold"]
    });
    let expected = json!({
        "type": "object",
        "additionalProperties": false,
        "properties": {
            "label": {
                "description": "A styled label.",
                "type": ["object", "null"],
                "properties": {"text": {"type": "string"}, "style": style},
                "required": ["text", "style"]
            },
            "copies": {"type": "integer", "format": "uint32", "minimum": 0, "default": 0}
        }
    });
    assert_eq!(PrintTool.spec().parameters, expected);
}

/// Answers pong.
#[tool]
async fn ping() -> &'static str {
    "pong"
}

#[derive(Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
struct NoArgs {}

#[test]
fn no_parameters_is_an_object_schema() {
    assert_eq!(
        PingTool.spec().parameters,
        json!({"type": "object", "properties": {}, "additionalProperties": false})
    );
    assert_eq!(PingTool.spec().parameters, schema_for::<NoArgs>());
}

// The struct a hand-written tool would use for `plot` (no doc comment: it would
// become a root `description`).
#[derive(Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
#[allow(dead_code)]
struct PlotArgs {
    /// Where to start.
    start: Point,
    /// The waypoints, in order.
    route: Vec<Point>,
}

#[test]
fn schema_equals_schema_for_an_equivalent_struct() {
    assert_eq!(PlotTool.spec().parameters, schema_for::<PlotArgs>());
}

/// Searches by kind.
#[tool]
async fn search(
    /// What kind of item.
    #[serde(rename = "type")]
    kind: String,
    #[schemars(range(min = 1, max = 50))] limit: u8,
) -> String {
    format!("{kind} {limit}")
}

#[test]
fn serde_and_schemars_attributes_reach_the_field() {
    let expected = json!({
        "type": "object",
        "additionalProperties": false,
        "properties": {
            "type": {"description": "What kind of item.", "type": "string"},
            "limit": {"type": "integer", "format": "uint8", "minimum": 1, "maximum": 50}
        },
        "required": ["type", "limit"]
    });
    assert_eq!(SearchTool.spec().parameters, expected);
}

#[tokio::test]
async fn renamed_parameters_are_read_from_the_renamed_property() {
    let args = json!({"type": "book", "limit": 3});
    let out = SearchTool
        .call(args, toolbelt_core::ToolContext::new())
        .await
        .unwrap();
    assert_eq!(out.text, "book 3");
}
