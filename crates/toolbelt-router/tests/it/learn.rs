//! Learning from use: successful calls teach the router their requests; failures never do.

use pretty_assertions::assert_eq;
use toolbelt_core::Toolset;
use toolbelt_router::{
    CallOutcome, LearnConfig, LearnedUsage, LexicalConfig, LexicalRouter, Lexicon, RouteError,
    RunLog, UseRecord,
};

use crate::tool;

const DAY: u64 = 24 * 3600;

struct Log(Vec<UseRecord>);

impl RunLog for Log {
    async fn tool_uses(&self, since: u64) -> Result<Vec<UseRecord>, RouteError> {
        Ok(self.0.iter().filter(|r| r.at >= since).cloned().collect())
    }
}

fn tools() -> Toolset {
    Toolset::from_tools([
        tool(
            "analytics_funnel",
            "Conversion funnel between two events",
            "analytics",
        ),
        tool("user_disable_account", "Disable a user account", "identity"),
        tool("send_email", "Send an email", "email"),
    ])
}

#[tokio::test]
async fn only_successful_recent_calls_are_learned_and_bounded() {
    let now = 100 * DAY;
    let records = vec![
        UseRecord::new(
            "analytics_funnel",
            "what share of signups end up paying",
            now - DAY,
            CallOutcome::Succeeded,
        ),
        UseRecord::new(
            "send_email",
            "lock Mark out, he left",
            now - DAY,
            CallOutcome::Failed,
        ),
        UseRecord::new(
            "user_disable_account",
            "lock Mark out, he left",
            now - DAY,
            CallOutcome::Denied,
        ),
        UseRecord::new(
            "send_email",
            "an ancient request",
            now - 95 * DAY,
            CallOutcome::Succeeded,
        ),
        UseRecord::new(
            "send_email",
            "mail the report to Ann",
            now - 2 * DAY,
            CallOutcome::Succeeded,
        ),
        UseRecord::new(
            "send_email",
            "mail the report to Ann",
            now - 3 * DAY,
            CallOutcome::Succeeded,
        ),
        UseRecord::new(
            "send_email",
            "tell Bob by mail",
            now - 4 * DAY,
            CallOutcome::Succeeded,
        ),
    ];
    let cfg = LearnConfig::default().with_max_per_tool(1);
    let learned = LearnedUsage::learn(records.clone(), now, &cfg);
    assert_eq!(
        learned.examples("analytics_funnel"),
        ["what share of signups end up paying"]
    );
    assert_eq!(
        learned.examples("send_email"),
        ["mail the report to Ann"],
        "most recent first, bounded"
    );
    assert!(
        learned.examples("user_disable_account").is_empty(),
        "denied calls teach nothing"
    );
    let all = LearnedUsage::learn(records.clone(), now, &LearnConfig::default());
    assert_eq!(
        all.examples("send_email"),
        ["mail the report to Ann", "tell Bob by mail"],
        "repeats once; the 95-day-old request decayed away; the failed call is not there"
    );
    let from_log = LearnedUsage::from_run_log(&Log(records), now, &LearnConfig::default())
        .await
        .unwrap();
    assert_eq!(from_log, all);
}

#[test]
fn learned_requests_route_later_requests_worded_the_same_way() {
    let tools = tools();
    // Without the concept lexicon, which links "signup" to "conversion" on its own.
    let router = LexicalRouter::new(LexicalConfig::default().with_lexicon(Lexicon::empty()));
    let query = "how many signups end up paying this month";
    assert!(
        router
            .search(&tools, query, 3)
            .iter()
            .all(|t| t.name != "analytics_funnel"),
        "no word shared before learning"
    );
    let now = 10 * DAY;
    let learned = LearnedUsage::learn(
        [
            UseRecord::new(
                "analytics_funnel",
                "what share of signups end up paying",
                now - DAY,
                CallOutcome::Succeeded,
            ),
            UseRecord::new(
                "send_email",
                "signups paying month",
                now - DAY,
                CallOutcome::Failed,
            ),
        ],
        now,
        &LearnConfig::default(),
    );
    router.set_learned_usage(Some(learned));
    let hits = router.search(&tools, query, 3);
    assert_eq!(hits[0].name, "analytics_funnel", "{hits:?}");
    assert!(hits.iter().all(|t| t.name != "send_email"), "{hits:?}");
    router.set_learned_usage(None);
    assert!(
        router
            .search(&tools, query, 3)
            .iter()
            .all(|t| t.name != "analytics_funnel")
    );
}

#[test]
fn past_requests_vote_in_the_hybrid_router() {
    use toolbelt_router::{HybridRouter, LexicalConfig, Lexicon};
    let tools = tools();
    let plain = || LexicalRouter::new(LexicalConfig::default().with_lexicon(Lexicon::empty()));
    let query = "how many signups end up paying this month";
    let before = crate::block_on(HybridRouter::new(plain()).rank(&tools, query, 3));
    assert!(
        before.tools.iter().all(|t| t.name != "analytics_funnel"),
        "{:?}",
        before.tools
    );
    let now = 10 * DAY;
    let learned = LearnedUsage::learn(
        [
            UseRecord::new(
                "analytics_funnel",
                "what share of signups end up paying",
                now - DAY,
                CallOutcome::Succeeded,
            ),
            UseRecord::new(
                "send_email",
                "signups end up paying",
                now - DAY,
                CallOutcome::Denied,
            ),
        ],
        now,
        &LearnConfig::default(),
    );
    let router = HybridRouter::new(plain()).with_learned_usage(&learned);
    let after = crate::block_on(router.rank(&tools, query, 3));
    assert_eq!(after.tools[0].name, "analytics_funnel", "{:?}", after.tools);
    assert!(
        after.confident && after.reason.contains("past requests best analytics_funnel"),
        "{}",
        after.reason
    );
}
