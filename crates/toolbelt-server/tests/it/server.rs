//! The library starts the server `toolbelt serve` starts (`Server::builder`): real HTTP, a
//! stored agent run against a scripted model, then a clean shutdown.

use pretty_assertions::assert_eq;
use serde_json::json;
use toolbelt_server::{Server, ServerConfig};
use toolbelt_store::AgentSpec;

use crate::support::{FakeModel, json_of, on_both, text};

#[tokio::test]
async fn the_library_starts_the_binarys_server_and_runs_a_stored_agent() {
    on_both(|db| async move {
        let model = FakeModel::start(vec![text(&["hello ", "from the library"])]).await;
        let store = db.open().await;
        let mut draft = AgentSpec::new("writer");
        draft.provider = Some("openai".to_owned());
        draft.model = Some("scripted".to_owned());
        draft.options.base_url = Some(model.url.clone());
        draft.options.api_key_env = Some("TOOLBELT_TEST_NO_KEY".to_owned());
        store.agents().create(&draft, "unknown").await.unwrap();
        let opened = toolbelt_server::database::open_store(store, Vec::new(), "test")
            .await
            .unwrap();
        let mut config = ServerConfig::default();
        config.dev = true;
        config.addr = "127.0.0.1:0".parse().unwrap();
        config.workspace = std::env::temp_dir();

        let server = Server::builder(config)
            .database(opened)
            .start()
            .await
            .unwrap();
        let url = format!("http://{}/api/v1/agents/writer/runs", server.addr());
        let view = json_of(
            reqwest::Client::new()
                .post(url)
                .json(&json!({"input": "say hello"}))
                .send()
                .await
                .unwrap(),
            200,
        )
        .await;
        assert_eq!(
            (view["status"].clone(), view["answer"].clone()),
            (json!("succeeded"), json!("hello from the library")),
            "{}: {view}",
            db.engine
        );
        assert_eq!(model.requests.lock().await.len(), 1);
        server.shutdown().await.unwrap();
        db
    })
    .await;
}
