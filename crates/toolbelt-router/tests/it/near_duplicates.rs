//! Near-duplicates: tools that share a name stem and a description are told
//! apart by their parameter names, enums and parameter descriptions.

use serde_json::json;
use toolbelt_core::{ToolHandle, Toolset};
use toolbelt_router::{CatalogTool, HybridRouter, LexicalRouter};

use crate::block_on;

fn variant(name: &str, description: &str, params: serde_json::Value) -> ToolHandle {
    let spec = toolbelt_core::ToolSpec::builder(name)
        .description(description)
        .parameters(json!({"type": "object", "properties": params}))
        .build()
        .unwrap();
    ToolHandle::new(CatalogTool::new(spec)).unwrap()
}

/// Six variants of one weather tool, as vendors write them, and some unrelated tools.
fn variants() -> Toolset {
    let d = "Get the weather.";
    Toolset::from_tools([
        variant(
            "weather.get",
            d,
            json!({"city": {"type": "string", "description": "City name"}}),
        ),
        variant(
            "weather.get_by_coordinates",
            d,
            json!({"latitude": {"type": "number"}, "longitude": {"type": "number"}}),
        ),
        variant(
            "weather.get_by_zip",
            d,
            json!({"zip_code": {"type": "string", "description": "Postal code"}}),
        ),
        variant(
            "weather_get_forecast",
            d,
            json!({"city": {"type": "string"}, "days": {"type": "integer", "description": "Number of days ahead"}}),
        ),
        variant(
            "weather/get_historical",
            d,
            json!({"city": {"type": "string"}, "date": {"type": "string", "description": "A past date, YYYY-MM-DD"}}),
        ),
        variant(
            "weather:get_air_quality",
            d,
            json!({"city": {"type": "string"}, "pollutant": {"type": "string", "enum": ["pm25", "ozone", "no2"]}}),
        ),
        variant(
            "send_email",
            "Send an email.",
            json!({"to": {"type": "string"}}),
        ),
        // Same description and parameter names; only the enums differ.
        variant(
            "units.convert",
            "Convert a value between units.",
            json!({"value": {"type": "number"}, "from_unit": {"type": "string", "enum": ["meter", "foot", "inch", "mile"]}, "to_unit": {"type": "string", "enum": ["meter", "foot", "inch", "mile"]}}),
        ),
        variant(
            "units.convert_v2",
            "Convert a value between units.",
            json!({"value": {"type": "number"}, "from_unit": {"type": "string", "enum": ["celsius", "fahrenheit", "kelvin"]}, "to_unit": {"type": "string", "enum": ["celsius", "fahrenheit", "kelvin"]}}),
        ),
        variant(
            "stock_price",
            "Get a stock price.",
            json!({"symbol": {"type": "string"}}),
        ),
    ])
}

const CASES: &[(&str, &str)] = &[
    (
        "weather at latitude 48.85 longitude 2.35",
        "weather.get_by_coordinates",
    ),
    (
        "what's the weather for zip code 94103",
        "weather.get_by_zip",
    ),
    (
        "weather in Paris for the next 5 days",
        "weather_get_forecast",
    ),
    (
        "what was the weather in Rome on 2020-01-01, a past date",
        "weather/get_historical",
    ),
    ("ozone level weather in Beijing", "weather:get_air_quality"),
    ("convert 30 celsius to fahrenheit", "units.convert_v2"),
    ("convert 3 miles to feet", "units.convert"),
];

#[test]
fn parameters_decide_between_near_duplicates_lexically() {
    let tools = variants();
    let router = LexicalRouter::default();
    for (query, want) in CASES {
        let hits = router.search(&tools, query, 3);
        assert!(!hits.is_empty(), "{query}: no hit");
        assert_eq!(hits[0].name, *want, "{query}: {hits:?}");
    }
}

#[test]
fn parameters_decide_between_near_duplicates_in_the_hybrid_router() {
    let tools = variants();
    let router = HybridRouter::default();
    for (query, want) in CASES {
        let ranking = block_on(router.rank(&tools, query, 3));
        assert_eq!(ranking.tools[0].name, *want, "{query}: {:?}", ranking.tools);
    }
}
