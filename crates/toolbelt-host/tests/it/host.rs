//! The host's background tasks: the encoder it loads fills the router's slot, a failed load
//! leaves routing by words, and shutdown ends a load that never finishes.

use std::sync::Arc;
use std::time::Duration;

use toolbelt_core::{BoxFuture, Registry};
use toolbelt_host::{AgentFactory, EncoderRole, Host};
use toolbelt_router::{Embedder, EmbedderError, EmbeddingRouter};

/// Embeds every text as the same vector.
struct Flat;

impl Embedder for Flat {
    fn model(&self) -> &str {
        "flat-v1"
    }
    fn embed<'a>(
        &'a self,
        texts: &'a [String],
    ) -> BoxFuture<'a, Result<Vec<Vec<f32>>, EmbedderError>> {
        Box::pin(async move { Ok(vec![vec![1.0, 0.0]; texts.len()]) })
    }
}

fn host() -> Host {
    Host::builder(AgentFactory::plain(Arc::new(Registry::new())).build()).build()
}

#[tokio::test]
async fn a_loaded_encoder_fills_the_slot_of_its_role() {
    let host = host();
    host.start_encoder(
        EncoderRole::English,
        Box::pin(async { Ok(EmbeddingRouter::new(Flat)) }),
    );
    let slot = host.agents().encoder_slot(EncoderRole::English);
    for _ in 0..200 {
        if slot.get().is_some() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(slot.get().map(EmbeddingRouter::model), Some("flat-v1"));
    assert!(
        host.agents()
            .encoder_slot(EncoderRole::Multilingual)
            .get()
            .is_none(),
        "the other role's slot stays empty"
    );
    host.shutdown().await;
}

#[tokio::test]
async fn a_failed_load_leaves_the_slot_empty() {
    let host = host();
    host.start_encoder(
        EncoderRole::Multilingual,
        Box::pin(async { Err("no model here".into()) }),
    );
    host.shutdown().await;
    assert!(
        host.agents()
            .encoder_slot(EncoderRole::Multilingual)
            .get()
            .is_none()
    );
}

#[tokio::test]
async fn shutdown_ends_a_load_that_never_finishes() {
    let host = host();
    host.start_encoder(EncoderRole::English, Box::pin(std::future::pending()));
    let stopped = tokio::time::timeout(Duration::from_secs(5), host.shutdown()).await;
    assert!(stopped.is_ok(), "shutdown waited for the load");
    assert!(
        host.agents()
            .encoder_slot(EncoderRole::English)
            .get()
            .is_none()
    );
}
