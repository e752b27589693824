//! [`RunStream`]: a run driven by polling its event stream.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use futures::Stream;
use tokio::sync::mpsc;
use toolbelt_core::BoxFuture;

use crate::error::AgentError;
use crate::event::{AgentEvent, EventSink};
use crate::transcript::RunOutput;

/// The events of a streamed run, ending with [`AgentEvent::Finished`] or [`AgentEvent::Failed`].
///
/// The run itself lives inside the stream: it advances while the stream is
/// polled (no task is spawned for it) and dropping the stream cancels it.
#[must_use = "a run stream does nothing unless polled"]
pub struct RunStream<'a> {
    run: Option<BoxFuture<'a, ()>>,
    events: mpsc::UnboundedReceiver<AgentEvent>,
    finished: bool,
}

impl fmt::Debug for RunStream<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RunStream")
            .field("running", &self.run.is_some())
            .finish_non_exhaustive()
    }
}

impl<'a> RunStream<'a> {
    /// Wraps a run that reports through the sink it is given; its result
    /// becomes the last event.
    pub(crate) fn new<F, Fut>(run: F) -> Self
    where
        F: FnOnce(EventSink) -> Fut,
        Fut: Future<Output = Result<RunOutput, AgentError>> + Send + 'a,
    {
        let (sink, events) = EventSink::channel();
        let fut = run(sink.clone());
        let run = Box::pin(async move {
            let last = match fut.await {
                Ok(output) => AgentEvent::Finished(Box::new(output)),
                Err(error) => AgentEvent::Failed(error),
            };
            sink.send(last);
        });
        Self {
            run: Some(run),
            events,
            finished: false,
        }
    }

    /// The next event; `None` after the last one. The same as
    /// `StreamExt::next`, for callers without `futures`.
    pub async fn next_event(&mut self) -> Option<AgentEvent> {
        std::future::poll_fn(|cx| Pin::new(&mut *self).poll_next(cx)).await
    }

    /// Drives the stream to its end and returns the run's result, dropping
    /// the other events. Approval requests are rejected.
    ///
    /// # Errors
    /// The run's [`AgentError`].
    pub async fn finish(mut self) -> Result<RunOutput, AgentError> {
        let mut result = None;
        while let Some(event) = self.next_event().await {
            match event {
                AgentEvent::Finished(output) => result = Some(Ok(*output)),
                AgentEvent::Failed(error) => result = Some(Err(error)),
                _ => {}
            }
        }
        result.unwrap_or_else(unreachable_end)
    }
}

/// The run future always sends a last event before ending; this is for the
/// impossible case, without a panic.
fn unreachable_end() -> Result<RunOutput, AgentError> {
    Err(AgentError::Cancelled {
        agent: String::new(),
        transcript: Box::default(),
    })
}

impl Stream for RunStream<'_> {
    type Item = AgentEvent;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<AgentEvent>> {
        let this = &mut *self;
        loop {
            if this.finished {
                return Poll::Ready(None);
            }
            if let Poll::Ready(Some(event)) = this.events.poll_recv(cx) {
                return Poll::Ready(Some(event));
            }
            let Some(run) = this.run.as_mut() else {
                // The run has ended and its events are drained. Tasks it
                // aborted may still hold a sender, so do not wait for close.
                this.finished = true;
                return Poll::Ready(this.events.try_recv().ok());
            };
            match run.as_mut().poll(cx) {
                Poll::Ready(()) => this.run = None,
                Poll::Pending => return Poll::Pending,
            }
        }
    }
}
