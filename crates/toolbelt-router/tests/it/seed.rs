//! The routing design's table (requests in Chinese and English and the groups they need): the routing examples every router configuration must pass.

use pretty_assertions::assert_eq;
use toolbelt_router::{AnyRouter, HybridRouter, KeywordRouter, LexicalRouter, RouteOutcome};

use crate::{block_on, builtins, eval_catalog, request};

fn names(router: &AnyRouter, input: &str, toolset: &toolbelt_core::Toolset) -> (Vec<String>, bool) {
    let d = block_on(router.route_or_fallback(&request(input, toolset)));
    assert_eq!(d.outcome, RouteOutcome::Tools);
    (d.tool_names(), d.fallback)
}

#[test]
fn keyword_router_passes_the_seed_table() {
    let router = AnyRouter::new(KeywordRouter::builtin());
    let tools = builtins();
    let (edit, _) = names(&router, "帮我改一下这个函数", &tools);
    assert!(
        edit.contains(&"file_edit".into()) && edit.contains(&"git".into()),
        "{edit:?}"
    );
    assert_eq!(
        names(&router, "今天的天气怎么样", &tools),
        (vec!["http_request".into()], false)
    );
    assert_eq!(
        names(&router, "启动一个每分钟的定时任务", &tools),
        (vec!["routine".into()], false)
    );
    assert_eq!(
        names(&router, "你好", &tools),
        (tools.iter().map(|t| t.name().to_string()).collect(), true)
    );
}

#[test]
fn hybrid_router_passes_the_seed_table_on_builtins() {
    let router = AnyRouter::new(
        HybridRouter::new(LexicalRouter::default()).with_keyword(KeywordRouter::builtin()),
    );
    let tools = builtins();
    let (edit, fallback) = names(&router, "帮我改一下这个函数", &tools);
    assert!(
        !fallback && edit.contains(&"file_edit".into()) && edit.contains(&"git".into()),
        "{edit:?}"
    );
    let (web, _) = names(&router, "今天的天气怎么样", &tools);
    assert!(web.contains(&"http_request".into()), "{web:?}");
    assert_eq!(
        names(&router, "启动一个每分钟的定时任务", &tools).0[0],
        "routine"
    );
    assert_eq!(names(&router, "你好", &tools).1, true);
}

#[test]
fn hybrid_router_passes_the_seed_table_on_the_eval_catalog() {
    let router = AnyRouter::new(HybridRouter::default());
    let tools = eval_catalog();
    let (edit, _) = names(&router, "帮我改一下这个函数", &tools);
    assert!(edit[..5].contains(&"file_edit".into()), "{edit:?}");
    assert!(names(&router, "今天的天气怎么样", &tools).0[..3].contains(&"weather_current".into()));
    assert_eq!(
        names(&router, "启动一个每分钟的定时任务", &tools).0[0],
        "routine"
    );
    // Unsure over 322 tools: the "send every tool when unsure" rule is bounded to the best
    // 20 ranked; "hello" matches no tool at all, so none is sent.
    let (some, fallback) = names(&router, "你好", &tools);
    assert!(!fallback && some.is_empty(), "{some:?}");
}
