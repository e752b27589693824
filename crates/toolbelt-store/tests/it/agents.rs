//! Agents: create with bindings, pins, bind/unbind, conflicts, nothing half-written, availability.

use std::collections::BTreeSet;
use toolbelt_store::Revision;

use pretty_assertions::assert_eq;
use toolbelt_store::{
    AgentSpec, Availability, Binding, Condition, Environment, Reason, StoreError, availability,
};

use crate::support::{each_engine, http_def};

#[tokio::test]
async fn an_agent_round_trips_with_bindings_and_pins() {
    each_engine(|store| async move {
        store
            .tools()
            .create(&http_def("search", "a"), "tester", None)
            .await
            .unwrap();
        store
            .tools()
            .update(&http_def("search", "b"), Revision::from(1), "tester", None)
            .await
            .unwrap();
        store
            .tools()
            .create(&http_def("fetch", "f"), "tester", None)
            .await
            .unwrap();
        let mut draft = AgentSpec::new("researcher")
            .with_selection("web,search@1,-fetch")
            .with_tool(Binding::new("fetch").pinned(1));
        draft.labels = vec!["prod".into()];
        draft.options.max_iterations = Some(4);
        let agent = store.agents().create(&draft, "me").await.unwrap();
        assert_eq!(agent.selection, "web,search,-fetch");
        assert_eq!(agent.pins.get("search"), Some(&1));
        assert_eq!(agent.tools, vec![Binding::new("fetch").pinned(1)]);
        assert_eq!(agent.options.max_iterations, Some(4));
        assert_eq!(store.agents().get("researcher").await.unwrap(), agent);
        assert_eq!(store.agents().list().await.unwrap(), vec![agent]);
    })
    .await;
}

#[tokio::test]
async fn a_bad_binding_writes_nothing() {
    each_engine(|store| async move {
        store
            .tools()
            .create(&http_def("search", "a"), "tester", None)
            .await
            .unwrap();
        let draft = AgentSpec::new("a")
            .with_tool(Binding::new("search"))
            .with_tool(Binding::new("nope"));
        let err = store.agents().create(&draft, "unknown").await.unwrap_err();
        assert_eq!(
            err.to_string(),
            "invalid tools[1]: no tool named `nope` (`toolbelt tools list` shows the stored tools)"
        );
        assert!(matches!(
            store.agents().get("a").await,
            Err(StoreError::NotFound { .. })
        ));
        let draft = AgentSpec::new("a").with_selection("search@7");
        let err = store.agents().create(&draft, "unknown").await.unwrap_err();
        assert_eq!(
            err.to_string(),
            "invalid pins.search: tool `search` has no version 7 (latest is 1)"
        );
        let err = store
            .agents()
            .create(&AgentSpec::new("a").with_selection("web,,x"), "unknown")
            .await
            .unwrap_err();
        assert!(err.to_string().starts_with("invalid selection: "), "{err}");
        assert!(store.agents().list().await.unwrap().is_empty());
    })
    .await;
}

#[tokio::test]
async fn bind_and_unbind_persist_and_bump_the_revision() {
    each_engine(|store| async move {
        store
            .tools()
            .create(&http_def("search", "a"), "tester", None)
            .await
            .unwrap();
        let agent = store
            .agents()
            .create(&AgentSpec::new("a"), "unknown")
            .await
            .unwrap();
        let bound = store
            .agents()
            .bind(
                "a",
                &Binding::new("search"),
                Revision::Exactly(agent.revision),
                "me",
            )
            .await
            .unwrap();
        assert_eq!(bound.tools, vec![Binding::new("search")]);
        assert_eq!(bound.revision, agent.revision + 1);
        let err = store
            .agents()
            .bind(
                "a",
                &Binding::new("search"),
                Revision::Exactly(agent.revision),
                "me",
            )
            .await
            .unwrap_err();
        assert!(matches!(err, StoreError::Conflict { .. }), "{err:?}");
        let err = store
            .tools()
            .delete("search", Revision::Any)
            .await
            .unwrap_err();
        assert_eq!(
            err.to_string(),
            "tool `search` is bound to agent(s) a; unbind it first"
        );
        let unbound = store
            .agents()
            .unbind("a", "search", Revision::Any, "me")
            .await
            .unwrap();
        assert!(unbound.tools.is_empty());
        let err = store
            .agents()
            .unbind("a", "search", Revision::Any, "me")
            .await
            .unwrap_err();
        assert_eq!(err.to_string(), "binding `a -> search` not found");
        store.tools().delete("search", Revision::Any).await.unwrap();
    })
    .await;
}

#[tokio::test]
async fn update_agent_checks_the_revision() {
    each_engine(|store| async move {
        let agent = store
            .agents()
            .create(&AgentSpec::new("a"), "unknown")
            .await
            .unwrap();
        let mut draft = agent.value.clone();
        draft.system_prompt = Some("be brief".into());
        let updated = store
            .agents()
            .update(&draft, Revision::Exactly(agent.revision), "unknown")
            .await
            .unwrap();
        assert_eq!(updated.system_prompt.as_deref(), Some("be brief"));
        let err = store
            .agents()
            .update(&draft, Revision::Exactly(agent.revision), "unknown")
            .await
            .unwrap_err();
        assert!(
            matches!(
                err,
                StoreError::Conflict {
                    expected: 1,
                    found: 2,
                    ..
                }
            ),
            "{err:?}"
        );
        store
            .agents()
            .delete("a", Revision::Exactly(updated.revision))
            .await
            .unwrap();
        assert!(store.agents().list().await.unwrap().is_empty());
    })
    .await;
}

#[tokio::test]
async fn why_names_every_reason() {
    each_engine(|store| async move {
        store
            .tools()
            .create(&http_def("search", "a"), "tester", None)
            .await
            .unwrap();
        let mut rules = Availability::default();
        rules.agent_kinds = vec!["researcher".into()];
        rules.capabilities = vec!["network".into()];
        rules.conditions = vec![
            Condition::Secret("GITHUB_TOKEN".into()),
            Condition::TimeWindow {
                from: "09:00".into(),
                to: "17:00".into(),
            },
        ];
        let tool = store
            .tools()
            .set_availability("search", &rules, Revision::Any, "me")
            .await
            .unwrap();
        let agent = store
            .agents()
            .create(&AgentSpec::new("a").with_selection("web"), "unknown")
            .await
            .unwrap();
        let tags = BTreeSet::from(["web".to_owned()]);
        let verdict = availability(
            &agent,
            &tool,
            &tags,
            &Environment::default().at_minute(8 * 60),
        );
        assert_eq!(
            verdict.reasons,
            vec![
                Reason::KindNotAllowed {
                    kind: "assistant".into(),
                    allowed: vec!["researcher".into()]
                },
                Reason::CapabilityMissing {
                    capability: "network".into()
                },
                Reason::SecretMissing {
                    name: "GITHUB_TOKEN".into()
                },
                Reason::OutsideTimeWindow {
                    from: "09:00".into(),
                    to: "17:00".into()
                },
            ]
        );
        let mut draft = agent.value.clone();
        draft.kind = "researcher".into();
        draft.capabilities = vec!["network".into()];
        let agent = store
            .agents()
            .update(&draft, Revision::Exactly(agent.revision), "unknown")
            .await
            .unwrap();
        let env = Environment::default()
            .with_secrets(["GITHUB_TOKEN"])
            .at_minute(10 * 60);
        assert!(availability(&agent, &tool, &tags, &env).is_available());
        let off = store
            .tools()
            .set_enabled("search", false, Revision::Any, "me")
            .await
            .unwrap();
        let other = store
            .agents()
            .create(&AgentSpec::new("b").with_selection("-web"), "unknown")
            .await
            .unwrap();
        assert_eq!(
            availability(&other, &off, &tags, &env).reasons,
            vec![
                Reason::Disabled,
                Reason::NotSelected {
                    selection: "-web".into()
                },
                Reason::KindNotAllowed {
                    kind: "assistant".into(),
                    allowed: vec!["researcher".into()]
                },
                Reason::CapabilityMissing {
                    capability: "network".into()
                }
            ]
        );
    })
    .await;
}

#[tokio::test]
async fn a_bad_time_window_is_refused() {
    each_engine(|store| async move {
        store.tools().create(&http_def("search", "a"), "tester", None).await.unwrap();
        let mut rules = Availability::default();
        rules.conditions = vec![Condition::TimeWindow { from: "9am".into(), to: "17:00".into() }];
        let err = store.tools().set_availability("search", &rules, Revision::Any, "me").await.unwrap_err();
        assert_eq!(
            err.to_string(),
            "invalid conditions[0].time_window.from: `9am` is not a time of day HH:MM (00:00 to 23:59)"
        );
    })
    .await;
}
