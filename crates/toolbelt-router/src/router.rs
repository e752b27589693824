//! The [`Router`] trait and its shared handle [`AnyRouter`].

use std::fmt;
use std::future::Future;
use std::sync::Arc;

use toolbelt_core::BoxFuture;

use crate::decision::{RouteDecision, RouteRequest};
use crate::error::RouteError;

/// Chooses the tools a request needs.
///
/// A router that cannot decide should answer with
/// [`RouteDecision::fallback`]; an `Err` means it failed (a network error, a
/// bad answer from an LLM router), and the caller falls back to the next
/// router or to every tool. Routing never fails the user's request.
pub trait Router: Send + Sync + 'static {
    /// A short name for logs and decisions (`keyword`, `bm25`, `hybrid`, ...).
    fn name(&self) -> &'static str;

    /// Decides which tools of `request.toolset` to send for `request.input`.
    fn route(
        &self,
        request: &RouteRequest,
    ) -> impl Future<Output = Result<RouteDecision, RouteError>> + Send;
}

trait ErasedRouter: Send + Sync + 'static {
    fn name(&self) -> &'static str;
    fn route<'a>(
        &'a self,
        request: &'a RouteRequest,
    ) -> BoxFuture<'a, Result<RouteDecision, RouteError>>;
}

impl<R: Router> ErasedRouter for R {
    fn name(&self) -> &'static str {
        Router::name(self)
    }
    fn route<'a>(
        &'a self,
        request: &'a RouteRequest,
    ) -> BoxFuture<'a, Result<RouteDecision, RouteError>> {
        Box::pin(Router::route(self, request))
    }
}

/// A shared, type-erased [`Router`]; cloning is an `Arc` clone.
#[derive(Clone)]
pub struct AnyRouter {
    inner: Arc<dyn ErasedRouter>,
}

impl fmt::Debug for AnyRouter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("AnyRouter")
            .field(&self.inner.name())
            .finish()
    }
}

impl AnyRouter {
    /// Wraps `router`.
    pub fn new(router: impl Router) -> Self {
        Self {
            inner: Arc::new(router),
        }
    }

    /// The router's name.
    pub fn name(&self) -> &'static str {
        self.inner.name()
    }

    /// See [`Router::route`].
    pub fn route<'a>(
        &'a self,
        request: &'a RouteRequest,
    ) -> BoxFuture<'a, Result<RouteDecision, RouteError>> {
        self.inner.route(request)
    }

    /// Routes, turning a failure into a fallback to every tool (what an agent wants).
    pub async fn route_or_fallback(&self, request: &RouteRequest) -> RouteDecision {
        match self.inner.route(request).await {
            Ok(decision) => decision,
            Err(e) => RouteDecision::fallback(
                self.name(),
                &request.toolset,
                format!("router failed: {e}"),
            ),
        }
    }
}
