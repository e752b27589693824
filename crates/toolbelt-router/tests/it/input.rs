//! Edge inputs: empty, very long, English and Chinese.

use toolbelt_router::{AnyRouter, HybridRouter, KeywordRouter, LexicalRouter};

use crate::{block_on, eval_catalog, request};

fn hybrid() -> AnyRouter {
    AnyRouter::new(HybridRouter::default())
}

/// The hybrid router with the unbounded fallback (every tool, whatever the size).
fn hybrid_unbounded() -> AnyRouter {
    AnyRouter::new(HybridRouter::default().with_config(
        toolbelt_router::HybridConfig::default().with_bounded_fallback(usize::MAX, 20),
    ))
}

#[test]
fn empty_input_falls_back_to_every_tool() {
    let tools = eval_catalog();
    let d = block_on(hybrid().route_or_fallback(&request("   ", &tools)));
    assert!(
        !d.fallback && d.bounded_fallback.is_some() && d.tools.is_empty(),
        "322 tools are above the bounded fallback's limit: {}",
        d.reason
    );
    for router in [
        hybrid_unbounded(),
        AnyRouter::new(LexicalRouter::default()),
        AnyRouter::new(KeywordRouter::builtin()),
    ] {
        let d = block_on(router.route_or_fallback(&request("   ", &tools)));
        assert!(
            d.fallback && d.tools.len() == tools.len(),
            "{}",
            router.name()
        );
    }
}

#[test]
fn very_long_input_is_routed_from_its_beginning() {
    let tools = eval_catalog();
    let mut input = "translate this document into French: ".to_owned();
    input.push_str(&"qwzx 12345 ääkkö 丂丄 ".repeat(100 * 1024 / 20));
    assert!(input.len() >= 100 * 1024);
    let d = block_on(hybrid().route_or_fallback(&request(&input, &tools)));
    assert!(
        d.tool_names().contains(&"translate_text".to_owned()),
        "{:?}",
        d.tool_names()
    );
}

#[test]
fn english_and_chinese_reach_the_same_tool() {
    let tools = eval_catalog();
    for input in ["refund the customer's payment", "给这个客户退款"] {
        let d = block_on(hybrid().route_or_fallback(&request(input, &tools)));
        assert!(
            d.tool_names()[..3].contains(&"stripe_refund".to_owned()),
            "{input}: {:?}",
            d.tool_names()
        );
    }
}
