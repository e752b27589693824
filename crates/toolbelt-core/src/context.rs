//! [`ToolContext`]: what a call knows about where it runs.

use std::any::{Any, TypeId};
use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;

use tokio_util::sync::CancellationToken;

/// Per-call context handed to every tool; cheap to clone.
///
/// Carries the call id, a cancellation token the tool should honour in long
/// work, the conversation id (for per-conversation state such as a todo list),
/// the nesting depth (agents calling agents) and typed extensions the host
/// provides (a workspace root, a human channel, a store handle, ...).
#[derive(Clone, Default)]
pub struct ToolContext {
    call_id: Option<Arc<str>>,
    conversation_id: Option<Arc<str>>,
    cancel: CancellationToken,
    depth: u32,
    extensions: Extensions,
}

impl fmt::Debug for ToolContext {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ToolContext")
            .field("call_id", &self.call_id)
            .field("conversation_id", &self.conversation_id)
            .field("cancelled", &self.cancel.is_cancelled())
            .field("depth", &self.depth)
            .field("extensions", &self.extensions.len())
            .finish()
    }
}

impl ToolContext {
    /// An empty context with a fresh cancellation token.
    pub fn new() -> Self {
        Self::default()
    }

    /// Reports how far the running call has got (`progress` of `total`, when known). The
    /// executor delivers it as [`ExecEvent::Progress`](crate::ExecEvent::Progress) and to the
    /// [`ProgressSink`](crate::ProgressSink) in this context, if any; outside an executor, or
    /// with nobody listening, it does nothing.
    pub fn report_progress(&self, progress: f64, total: Option<f64>, message: Option<String>) {
        if let Some(call) = self.get::<crate::progress::CallProgress>() {
            (call.deliver)(&crate::Progress {
                call_id: call.call_id.clone(),
                tool: call.tool.clone(),
                progress,
                total,
                message,
            });
        }
    }

    /// The id of the call being executed, when known.
    pub fn call_id(&self) -> Option<&str> {
        self.call_id.as_deref()
    }

    /// Sets the call id.
    #[must_use]
    pub fn with_call_id(mut self, id: impl Into<Arc<str>>) -> Self {
        self.call_id = Some(id.into());
        self
    }

    /// The conversation this call belongs to, when known.
    pub fn conversation_id(&self) -> Option<&str> {
        self.conversation_id.as_deref()
    }

    /// Sets the conversation id.
    #[must_use]
    pub fn with_conversation_id(mut self, id: impl Into<Arc<str>>) -> Self {
        self.conversation_id = Some(id.into());
        self
    }

    /// The token cancelled when the run or call is abandoned.
    pub fn cancellation(&self) -> &CancellationToken {
        &self.cancel
    }

    /// Uses `token` for cancellation.
    #[must_use]
    pub fn with_cancellation(mut self, token: CancellationToken) -> Self {
        self.cancel = token;
        self
    }

    /// Whether the call has been cancelled.
    pub fn is_cancelled(&self) -> bool {
        self.cancel.is_cancelled()
    }

    /// How many agents-as-tools deep this call is (0 at the top).
    pub fn depth(&self) -> u32 {
        self.depth
    }

    /// Sets the nesting depth.
    #[must_use]
    pub fn with_depth(mut self, depth: u32) -> Self {
        self.depth = depth;
        self
    }

    /// The extension of type `T`, if the host provided one.
    pub fn get<T: Send + Sync + 'static>(&self) -> Option<&T> {
        self.extensions.get::<T>()
    }

    /// Adds (or replaces) an extension of type `T`.
    #[must_use]
    pub fn with<T: Send + Sync + 'static>(mut self, value: T) -> Self {
        self.extensions.insert(value);
        self
    }

    /// The extensions map.
    pub fn extensions(&self) -> &Extensions {
        &self.extensions
    }

    /// Replaces the extensions map.
    #[must_use]
    pub fn with_extensions(mut self, extensions: Extensions) -> Self {
        self.extensions = extensions;
        self
    }
}

/// A type-keyed map of shared values; clones share the values.
#[derive(Clone)]
pub struct Extensions {
    map: Arc<HashMap<TypeId, Arc<dyn Any + Send + Sync>>>,
    /// Unique per distinct content: new on creation and on every insert, kept by clones.
    identity: u64,
}

/// Source of [`Extensions`] identities (the result cache keys on them).
static NEXT_EXTENSIONS_ID: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);

fn next_extensions_id() -> u64 {
    NEXT_EXTENSIONS_ID.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
}

impl Default for Extensions {
    fn default() -> Self {
        Self {
            map: Arc::default(),
            identity: next_extensions_id(),
        }
    }
}

impl fmt::Debug for Extensions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Extensions")
            .field("len", &self.map.len())
            .finish()
    }
}

impl Extensions {
    /// An empty map.
    pub fn new() -> Self {
        Self::default()
    }

    /// Inserts `value`, replacing any earlier value of the same type.
    pub fn insert<T: Send + Sync + 'static>(&mut self, value: T) {
        Arc::make_mut(&mut self.map).insert(TypeId::of::<T>(), Arc::new(value));
        self.identity = next_extensions_id();
    }

    /// A number unique to this content in this process: two maps share it only
    /// when one is a clone of the other with no insert since. The result cache
    /// keys on it, so a cached result never crosses to a context holding other
    /// values (another agent's info, another workspace).
    pub fn identity(&self) -> u64 {
        self.identity
    }

    /// The value of type `T`.
    pub fn get<T: Send + Sync + 'static>(&self) -> Option<&T> {
        self.map
            .get(&TypeId::of::<T>())
            .and_then(|v| v.downcast_ref::<T>())
    }

    /// Number of values.
    pub fn len(&self) -> usize {
        self.map.len()
    }

    /// Whether the map is empty.
    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }
}
