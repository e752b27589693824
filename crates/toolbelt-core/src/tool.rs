//! The [`Tool`] trait, its shared handle [`ToolHandle`], and closure tools.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, OnceLock};

use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::context::ToolContext;
use crate::error::{SpecError, ToolError};
use crate::name::ToolName;
use crate::output::{IntoToolOutput, ToolOutput};
use crate::spec::{ToolSpec, ToolSpecBuilder};
use crate::validate::CompiledSchema;

/// A boxed future returned by object-safe tool calls.
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// Something an agent can call.
///
/// Implement it by hand for tools with state, use [`FnTool`] for closures, or
/// put `#[tool]` on an async fn. The executor validates `args` against
/// [`ToolSpec::parameters`] before `call` runs and applies timeouts, retries,
/// approval and output limits around it, so a tool does none of that itself.
pub trait Tool: Send + Sync + 'static {
    /// The tool's definition. Called once, when the tool is wrapped in a [`ToolHandle`].
    fn spec(&self) -> ToolSpec;

    /// Runs the tool with arguments that already passed schema validation.
    fn call(
        &self,
        args: Value,
        ctx: ToolContext,
    ) -> impl Future<Output = Result<ToolOutput, ToolError>> + Send;
}

/// Object-safe twin of [`Tool`], so tools of different types share one registry.
trait ErasedTool: Send + Sync + 'static {
    fn call_boxed(
        &self,
        args: Value,
        ctx: ToolContext,
    ) -> BoxFuture<'_, Result<ToolOutput, ToolError>>;
}

impl<T: Tool> ErasedTool for T {
    fn call_boxed(
        &self,
        args: Value,
        ctx: ToolContext,
    ) -> BoxFuture<'_, Result<ToolOutput, ToolError>> {
        Box::pin(self.call(args, ctx))
    }
}

struct Inner {
    spec: ToolSpec,
    tool: Box<dyn ErasedTool>,
    schema: OnceLock<Result<CompiledSchema, SpecError>>,
    /// Bytes of the compact function JSON, measured on first use.
    function_json_len: OnceLock<usize>,
}

/// A shared, type-erased tool with its spec; what registries and toolsets hold.
///
/// Cloning is an `Arc` clone. The compiled argument validator is built on first
/// use and cached here, so it is compiled once per tool, not per call.
#[derive(Clone)]
pub struct ToolHandle {
    inner: Arc<Inner>,
}

impl fmt::Debug for ToolHandle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ToolHandle")
            .field("name", &self.inner.spec.name)
            .finish_non_exhaustive()
    }
}

impl ToolHandle {
    /// Wraps `tool`, validating its spec.
    ///
    /// # Errors
    /// [`SpecError`] when the spec's tags or parameter schema are invalid.
    pub fn new<T: Tool>(tool: T) -> Result<Self, SpecError> {
        let spec = tool.spec();
        spec.validate()?;
        Ok(Self {
            inner: Arc::new(Inner {
                spec,
                tool: Box::new(tool),
                schema: OnceLock::new(),
                function_json_len: OnceLock::new(),
            }),
        })
    }

    /// The tool's definition.
    pub fn spec(&self) -> &ToolSpec {
        &self.inner.spec
    }

    /// Bytes of the spec's compact function JSON ([`ToolSpec::to_function_json`]), what a
    /// model is sent for this tool; measured once per handle (token estimates over a large
    /// catalog on every request would otherwise serialise every schema each time).
    pub fn function_json_len(&self) -> usize {
        *self
            .inner
            .function_json_len
            .get_or_init(|| self.inner.spec.to_function_json().to_string().len())
    }

    /// The tool's name.
    pub fn name(&self) -> &ToolName {
        &self.inner.spec.name
    }

    /// Calls the tool directly, without validation, timeout or approval.
    ///
    /// Use an [`Executor`](crate::Executor) to get those.
    pub fn call(
        &self,
        args: Value,
        ctx: ToolContext,
    ) -> BoxFuture<'_, Result<ToolOutput, ToolError>> {
        self.inner.tool.call_boxed(args, ctx)
    }

    /// The compiled validator of the parameter schema, built on first use.
    pub(crate) fn compiled_schema(&self) -> &Result<CompiledSchema, SpecError> {
        self.inner
            .schema
            .get_or_init(|| CompiledSchema::compile(&self.inner.spec))
    }

    /// Whether both handles point at the same tool.
    pub fn ptr_eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.inner, &other.inner)
    }
}

type RawHandler =
    dyn Fn(Value, ToolContext) -> BoxFuture<'static, Result<ToolOutput, ToolError>> + Send + Sync;

/// A tool made from a spec and a closure.
///
/// ```
/// use toolbelt_core::{FnTool, ToolHandle};
///
/// #[derive(serde::Deserialize, schemars::JsonSchema)]
/// struct Args { a: i64, b: i64 }
///
/// let add: ToolHandle = FnTool::builder("add")
///     .description("Add two integers")
///     .tag("math")
///     .typed(|args: Args, _ctx| async move { Ok::<_, toolbelt_core::ToolError>(args.a + args.b) })
///     .unwrap();
/// assert_eq!(add.spec().tags, ["math"]);
/// ```
pub struct FnTool {
    spec: ToolSpec,
    handler: Arc<RawHandler>,
}

impl fmt::Debug for FnTool {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FnTool")
            .field("spec", &self.spec)
            .finish_non_exhaustive()
    }
}

impl FnTool {
    /// Starts a closure tool named `name`.
    pub fn builder(name: impl Into<String>) -> FnToolBuilder {
        FnToolBuilder {
            spec: ToolSpec::builder(name),
        }
    }

    /// A tool from a finished spec and a handler taking raw JSON arguments.
    pub fn new<F, Fut, O>(spec: ToolSpec, handler: F) -> Self
    where
        F: Fn(Value, ToolContext) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = O> + Send + 'static,
        O: IntoToolOutput,
    {
        let handler: Arc<RawHandler> = Arc::new(move |args, ctx| {
            let fut = handler(args, ctx);
            Box::pin(async move { fut.await.into_tool_output() })
        });
        Self { spec, handler }
    }
}

impl Tool for FnTool {
    fn spec(&self) -> ToolSpec {
        self.spec.clone()
    }

    fn call(
        &self,
        args: Value,
        ctx: ToolContext,
    ) -> impl Future<Output = Result<ToolOutput, ToolError>> + Send {
        (self.handler)(args, ctx)
    }
}

/// Builds an [`FnTool`]: the [`ToolSpecBuilder`] options, then a handler.
#[must_use]
pub struct FnToolBuilder {
    spec: ToolSpecBuilder,
}

impl FnToolBuilder {
    /// Edits the spec with the [`ToolSpecBuilder`] options.
    pub fn spec(mut self, edit: impl FnOnce(ToolSpecBuilder) -> ToolSpecBuilder) -> Self {
        self.spec = edit(self.spec);
        self
    }

    /// What the tool does, for the model.
    pub fn description(self, description: impl Into<String>) -> Self {
        self.spec(|s| s.description(description))
    }

    /// Adds one tag (group).
    pub fn tag(self, tag: impl Into<String>) -> Self {
        self.spec(|s| s.tag(tag))
    }

    /// The JSON Schema of the arguments, for [`FnToolBuilder::handler`].
    pub fn parameters(self, schema: Value) -> Self {
        self.spec(|s| s.parameters(schema))
    }

    /// Finishes with a handler that takes raw JSON arguments.
    ///
    /// # Errors
    /// [`SpecError`] from the spec builder.
    pub fn handler<F, Fut, O>(self, handler: F) -> Result<ToolHandle, SpecError>
    where
        F: Fn(Value, ToolContext) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = O> + Send + 'static,
        O: IntoToolOutput,
    {
        ToolHandle::new(FnTool::new(self.spec.build()?, handler))
    }

    /// Finishes with a handler taking typed arguments; the schema is derived from `A`.
    ///
    /// # Errors
    /// [`SpecError`] from the spec builder.
    pub fn typed<A, F, Fut, O>(self, handler: F) -> Result<ToolHandle, SpecError>
    where
        A: DeserializeOwned + schemars::JsonSchema + Send + 'static,
        F: Fn(A, ToolContext) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = O> + Send + 'static,
        O: IntoToolOutput,
    {
        let spec = self.spec.parameters_from::<A>().build()?;
        let handler = Arc::new(handler);
        ToolHandle::new(FnTool::new(spec, move |args: Value, ctx| {
            let handler = Arc::clone(&handler);
            async move {
                let args = parse_args::<A>(args)?;
                handler(args, ctx).await.into_tool_output()
            }
        }))
    }
}

/// Deserialises validated arguments into `A`, naming the failing field on error.
///
/// # Errors
/// [`ToolError::InvalidArguments`] with the serde message.
pub fn parse_args<A: DeserializeOwned>(args: Value) -> Result<A, ToolError> {
    serde_json::from_value(args).map_err(|e| ToolError::invalid_argument("", e.to_string()))
}

/// A type that contributes a set of tools at once (a tool module).
pub trait ToolModule {
    /// The tools this module provides.
    ///
    /// # Errors
    /// [`SpecError`] if one of its tools has an invalid spec.
    fn tools(&self) -> Result<Vec<ToolHandle>, SpecError>;
}

/// A tool collected at link time by `#[tool]`; see [`Registry::discovered`](crate::Registry::discovered).
#[derive(Debug)]
pub struct Registration {
    /// Builds the tool.
    pub make: fn() -> Result<ToolHandle, SpecError>,
    /// Source location of the definition, for error messages.
    pub location: &'static str,
}

inventory::collect!(Registration);

/// Anything the registry accepts as a tool: a [`ToolHandle`] or any [`Tool`].
pub trait IntoToolHandle {
    /// Wraps or passes through the tool.
    ///
    /// # Errors
    /// [`SpecError`] when the tool's spec is invalid.
    fn into_tool_handle(self) -> Result<ToolHandle, SpecError>;
}

impl IntoToolHandle for ToolHandle {
    fn into_tool_handle(self) -> Result<ToolHandle, SpecError> {
        Ok(self)
    }
}

impl<T: Tool> IntoToolHandle for T {
    fn into_tool_handle(self) -> Result<ToolHandle, SpecError> {
        ToolHandle::new(self)
    }
}
