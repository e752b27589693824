//! OpenTelemetry export of `toolbelt serve`'s spans over OTLP/HTTP with protobuf bodies
//! (feature `otel`; ADR 0044).
//!
//! The spans are the ones `tracing` already has: `http_request` (one per request, named
//! `METHOD /route` in OpenTelemetry), `agent_run` and `tool_call`. The batch processor runs
//! on a thread of its own and posts with reqwest's blocking client, so an unreachable
//! collector never holds a request or a runtime worker; what is queued is flushed when the
//! server stops gracefully.

use anyhow::Context as _;
use opentelemetry::trace::TracerProvider as _;
use opentelemetry_otlp::{Protocol, WithExportConfig as _};
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::trace::SdkTracerProvider;
use tracing::Subscriber;
use tracing_subscriber::Layer;
use tracing_subscriber::filter::{LevelFilter, Targets};
use tracing_subscriber::registry::LookupSpan;

/// The exporter's provider: [`OtelGuard::shutdown`] flushes what is queued.
pub(crate) struct OtelGuard(SdkTracerProvider);

impl OtelGuard {
    /// Exports the spans still queued and stops the exporter (waits up to the SDK's 5 s).
    pub(crate) fn shutdown(self) {
        if let Err(e) = self.0.shutdown() {
            tracing::warn!(error = %e, "OpenTelemetry: the last spans could not be exported");
        }
    }
}

/// Whether spans are to be exported: `--otel-endpoint`, or the standard
/// `OTEL_EXPORTER_OTLP_ENDPOINT` / `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` variables.
pub(crate) fn wanted(flag: Option<&str>) -> bool {
    flag.is_some()
        || [
            "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
            "OTEL_EXPORTER_OTLP_ENDPOINT",
        ]
        .iter()
        .any(|v| std::env::var_os(v).is_some_and(|s| !s.is_empty()))
}

/// The layer sending spans to the OTLP/HTTP endpoint, and the guard that flushes it.
///
/// `endpoint` (`--otel-endpoint`) is a base URL like `OTEL_EXPORTER_OTLP_ENDPOINT`:
/// traces go to `{endpoint}/v1/traces`. Without it the exporter reads the standard
/// variables. The service is `toolbelt` unless `OTEL_SERVICE_NAME` names another.
///
/// # Errors
/// An endpoint that is not an `http(s)` URL, or an exporter that cannot be built.
pub(crate) fn layer<S>(endpoint: Option<&str>) -> anyhow::Result<(impl Layer<S>, OtelGuard)>
where
    S: Subscriber + for<'a> LookupSpan<'a>,
{
    let mut exporter = opentelemetry_otlp::SpanExporter::builder()
        .with_http()
        .with_protocol(Protocol::HttpBinary);
    if let Some(base) = endpoint {
        let url = reqwest::Url::parse(base)
            .ok()
            .filter(|u| matches!(u.scheme(), "http" | "https"))
            .with_context(|| {
                format!(
                    "--otel-endpoint `{base}` is not an http(s) URL (e.g. http://127.0.0.1:4318)"
                )
            })?;
        let traces = format!("{}/v1/traces", url.as_str().trim_end_matches('/'));
        exporter = exporter.with_endpoint(traces);
    }
    let exporter = exporter
        .build()
        .context("building the OpenTelemetry exporter")?;
    let mut resource = Resource::builder();
    if std::env::var_os("OTEL_SERVICE_NAME").is_none_or(|s| s.is_empty()) {
        resource = resource.with_service_name("toolbelt");
    }
    let provider = SdkTracerProvider::builder()
        .with_batch_exporter(exporter)
        .with_resource(resource.build())
        .build();
    let tracer = provider.tracer("toolbelt");
    // Spans from INFO up, plus the per-request spans (DEBUG, so plain logging does not pay
    // for them); never the exporter's own HTTP traffic.
    let filter = Targets::new()
        .with_default(LevelFilter::INFO)
        .with_target("toolbelt_server::http", LevelFilter::DEBUG)
        .with_target("opentelemetry", LevelFilter::OFF)
        .with_target("reqwest", LevelFilter::OFF)
        .with_target("hyper", LevelFilter::OFF)
        .with_target("h2", LevelFilter::OFF);
    let layer = tracing_opentelemetry::layer()
        .with_tracer(tracer)
        .with_filter(filter);
    Ok((layer, OtelGuard(provider)))
}
