//! Group `human`: `ask_human`, a question to the person behind the agent.
//!
//! The question travels through a pluggable [`HumanChannel`]: [`StdinChannel`]
//! for a terminal, [`PendingQuestions`] for a server that lists open questions
//! and posts answers (and for tests).

use std::collections::BTreeMap;
use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use tokio::io::AsyncWriteExt;
use tokio::sync::{oneshot, watch};
use toolbelt_core::{BoxFuture, ToolContext, ToolError};
use toolbelt_macros::tool;

/// A question waiting for a person.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct HumanQuestion {
    /// Unique id (the call id when known).
    pub id: String,
    /// The question as the model wrote it.
    pub question: String,
    /// Suggested answers; empty for a free answer.
    pub choices: Vec<String>,
    /// The conversation asking, when known.
    pub conversation_id: Option<String>,
}

/// Why a question got no answer.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum HumanError {
    /// The channel closed (end of input, question withdrawn).
    #[error("the channel to the user is closed")]
    Closed,
    /// No open question has this id.
    #[error("no open question with id {id:?}")]
    UnknownQuestion {
        /// The id given.
        id: String,
    },
    /// Reading or writing the terminal failed.
    #[error("the terminal could not be used")]
    Io(#[from] std::io::Error),
}

/// Delivers a question to a person and waits for the answer.
pub trait HumanChannel: Send + Sync + 'static {
    /// Asks `question`. Dropping the future (timeout, cancelled run) withdraws it.
    fn ask(&self, question: HumanQuestion) -> BoxFuture<'_, Result<String, HumanError>>;
}

/// The human channel the tools use, with its waiting limits; a context extension.
#[derive(Clone)]
pub struct Human {
    channel: Arc<dyn HumanChannel>,
    /// Wait when the call gives no timeout (default 5 min).
    pub default_timeout: Duration,
    /// Longest wait a call may ask for (default 30 min).
    pub max_timeout: Duration,
}

impl fmt::Debug for Human {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Human")
            .field("default_timeout", &self.default_timeout)
            .field("max_timeout", &self.max_timeout)
            .finish_non_exhaustive()
    }
}

impl Human {
    /// Uses `channel` with the default limits.
    pub fn new(channel: impl HumanChannel) -> Self {
        Self::from_arc(Arc::new(channel))
    }

    /// Shares a channel already behind an `Arc` (keep a clone to answer through it).
    pub fn from_arc(channel: Arc<dyn HumanChannel>) -> Self {
        Self {
            channel,
            default_timeout: Duration::from_secs(300),
            max_timeout: Duration::from_secs(1800),
        }
    }

    /// Sets the default wait.
    #[must_use]
    pub fn with_default_timeout(mut self, timeout: Duration) -> Self {
        self.default_timeout = timeout;
        self
    }

    /// Sets the longest wait.
    #[must_use]
    pub fn with_max_timeout(mut self, timeout: Duration) -> Self {
        self.max_timeout = timeout;
        self
    }
}

static QUESTION_SEQ: AtomicU64 = AtomicU64::new(1);

/// Ask the user a question and wait for the answer; use it when you need a decision or information only they have.
#[tool(tags("human"), read_only, parallel = false, waits, timeout = "1h")]
pub async fn ask_human(
    ctx: &ToolContext,
    /// The question, self-contained: the user may not have followed the conversation.
    question: String,
    /// Answers to offer, when the choice is closed.
    choices: Option<Vec<String>>,
    /// Seconds to wait for the answer (default 300, capped by the host).
    timeout_secs: Option<u64>,
) -> Result<String, ToolError> {
    let human = ctx.get::<Human>().ok_or_else(|| {
        ToolError::failed(
            "no channel to the user is configured; the host must add a `Human` extension \
             (stdin for a terminal, `PendingQuestions` for a server)",
        )
    })?;
    if question.trim().is_empty() {
        return Err(ToolError::invalid_argument(
            "/question",
            "the question is empty",
        ));
    }
    let wait = timeout_secs
        .map_or(human.default_timeout, Duration::from_secs)
        .min(human.max_timeout);
    // Call ids come from the model's provider and repeat across runs ("call_0"), so a
    // question is named by its conversation (UUID v7, unique across processes) and call,
    // or, without a conversation, by its call and a process-wide sequence number.
    let seq = || QUESTION_SEQ.fetch_add(1, Ordering::Relaxed);
    let id = match (ctx.conversation_id(), ctx.call_id()) {
        (Some(conversation), Some(call)) => format!("{conversation}:{call}"),
        (Some(conversation), None) => format!("{conversation}:q{}", seq()),
        (None, Some(call)) => format!("{call}:q{}", seq()),
        (None, None) => format!("q{}", seq()),
    };
    let asked = HumanQuestion {
        id,
        question,
        choices: choices.unwrap_or_default(),
        conversation_id: ctx.conversation_id().map(str::to_owned),
    };
    let answer = tokio::select! {
        r = tokio::time::timeout(wait, human.channel.ask(asked)) => r,
        () = ctx.cancellation().cancelled() => return Err(ToolError::Cancelled),
    };
    match answer {
        Ok(Ok(answer)) => Ok(answer),
        Ok(Err(e)) => Err(ToolError::failed(format!(
            "the user could not be asked: {}",
            crate::shell::error_chain(&e)
        ))),
        Err(_) => Err(ToolError::failed(format!(
            "the user did not answer within {}s; go on without the answer or ask again later",
            wait.as_secs()
        ))),
    }
}

/// Asks on the terminal: the question goes to stderr, the answer is one line of stdin.
///
/// A number answers with that choice. Questions are asked one at a time.
/// Lines are read through the process-wide `std::io::stdin()` buffer, so
/// other readers of stdin (an approval prompt) lose nothing; but after a
/// timeout the read in progress cannot be abandoned, and the next line typed
/// goes to it and is lost.
#[derive(Debug, Default)]
pub struct StdinChannel {
    turn: tokio::sync::Mutex<()>,
}

impl StdinChannel {
    /// A channel on this process's stdin and stderr.
    pub fn new() -> Self {
        Self::default()
    }
}

/// Reads one line of stdin on a blocking thread; `None` at end of input.
pub(crate) async fn read_stdin_line() -> Result<Option<String>, std::io::Error> {
    tokio::task::spawn_blocking(|| {
        let mut line = String::new();
        let n = std::io::stdin().read_line(&mut line)?;
        Ok((n > 0).then_some(line))
    })
    .await
    .map_err(std::io::Error::other)?
}

impl HumanChannel for StdinChannel {
    fn ask(&self, question: HumanQuestion) -> BoxFuture<'_, Result<String, HumanError>> {
        Box::pin(async move {
            let _turn = self.turn.lock().await;
            let mut prompt = format!("\n? {}\n", question.question);
            for (i, choice) in question.choices.iter().enumerate() {
                prompt.push_str(&format!("  {}) {choice}\n", i + 1));
            }
            prompt.push_str("> ");
            let mut err = tokio::io::stderr();
            err.write_all(prompt.as_bytes()).await?;
            err.flush().await?;
            let line = read_stdin_line().await?.ok_or(HumanError::Closed)?;
            let answer = line.trim().to_owned();
            let picked = answer
                .parse::<usize>()
                .ok()
                .and_then(|n| n.checked_sub(1))
                .and_then(|i| question.choices.get(i));
            Ok(picked.cloned().unwrap_or(answer))
        })
    }
}

/// Open questions held in memory until someone answers them (a web console, a test).
///
/// Clones share the same questions.
#[derive(Debug, Clone, Default)]
pub struct PendingQuestions {
    inner: Arc<PendingInner>,
}

#[derive(Debug, Default)]
struct PendingInner {
    open: Mutex<BTreeMap<String, (HumanQuestion, oneshot::Sender<String>)>>,
    changes: watch::Sender<usize>,
}

impl PendingQuestions {
    /// No open questions.
    pub fn new() -> Self {
        Self::default()
    }

    /// The open questions, by id.
    pub fn pending(&self) -> Vec<HumanQuestion> {
        self.lock().values().map(|(q, _)| q.clone()).collect()
    }

    /// Answers the open question `id`.
    ///
    /// # Errors
    /// [`HumanError::UnknownQuestion`] when no such question is open (answered,
    /// timed out or never asked).
    pub fn answer(&self, id: &str, answer: impl Into<String>) -> Result<(), HumanError> {
        let entry = self.lock().remove(id);
        self.notify();
        let (_, reply) = entry.ok_or_else(|| HumanError::UnknownQuestion { id: id.to_owned() })?;
        reply.send(answer.into()).map_err(|_| HumanError::Closed)
    }

    /// Sees the number of open questions after every change.
    pub fn subscribe(&self) -> watch::Receiver<usize> {
        self.inner.changes.subscribe()
    }

    fn lock(
        &self,
    ) -> std::sync::MutexGuard<'_, BTreeMap<String, (HumanQuestion, oneshot::Sender<String>)>> {
        self.inner
            .open
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    fn notify(&self) {
        let n = self.lock().len();
        self.inner.changes.send_replace(n);
    }
}

/// Withdraws a question when its asker stops waiting.
struct Withdraw<'a> {
    pending: &'a PendingQuestions,
    id: String,
}

impl Drop for Withdraw<'_> {
    fn drop(&mut self) {
        if self.pending.lock().remove(&self.id).is_some() {
            self.pending.notify();
        }
    }
}

impl HumanChannel for PendingQuestions {
    fn ask(&self, question: HumanQuestion) -> BoxFuture<'_, Result<String, HumanError>> {
        Box::pin(async move {
            let (tx, rx) = oneshot::channel();
            let id = question.id.clone();
            self.lock().insert(id.clone(), (question, tx));
            self.notify();
            let _withdraw = Withdraw { pending: self, id };
            rx.await.map_err(|_| HumanError::Closed)
        })
    }
}
