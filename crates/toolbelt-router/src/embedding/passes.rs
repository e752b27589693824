//! [`Passes`]: the calls an in-process encoder embeds together, so concurrent requests share
//! its passes (one pass reads the model's weights once for all of them).

use std::sync::{Arc, Mutex, PoisonError};

/// What a pass of an encoder does with the texts of the calls it takes: their vectors, in
/// order, or an error message every one of those calls gets.
pub(super) type Pass = dyn Fn(&[String]) -> Result<Vec<Vec<f32>>, String> + Send + Sync;

/// Calls waiting for an encoder's next pass, and whether a pass is under way. A call that
/// finds the encoder idle starts a pass at once on the blocking pool; calls that arrive while
/// it is busy wait and are embedded together in the next one. Clones of an embedder share
/// one `Passes` (behind an `Arc`).
#[derive(Debug, Default)]
pub(super) struct Passes {
    state: Mutex<State>,
}

#[derive(Debug, Default)]
struct State {
    running: bool,
    waiting: Vec<Waiting>,
}

/// One call's texts and where its vectors go.
#[derive(Debug)]
struct Waiting {
    texts: Vec<String>,
    reply: tokio::sync::oneshot::Sender<Result<Vec<Vec<f32>>, String>>,
}

impl Passes {
    /// The vectors of `texts`, made by `pass` on the blocking pool together with the texts of
    /// the other calls waiting then (must run inside a Tokio runtime).
    ///
    /// # Errors
    /// The pass's message, or one saying the pass ended without an answer (it panicked).
    pub(super) async fn embed(
        self: &Arc<Self>,
        texts: &[String],
        pass: Arc<Pass>,
    ) -> Result<Vec<Vec<f32>>, String> {
        let (reply, vectors) = tokio::sync::oneshot::channel();
        let start = {
            let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
            state.waiting.push(Waiting {
                texts: texts.to_vec(),
                reply,
            });
            !std::mem::replace(&mut state.running, true)
        };
        if start {
            let passes = Arc::clone(self);
            tokio::task::spawn_blocking(move || passes.drain(&*pass));
        }
        vectors
            .await
            .map_err(|_| "the embedding task ended without an answer".to_owned())?
    }

    /// Embeds the waiting calls' texts, pass after pass, until none wait (on a blocking thread).
    fn drain(&self, pass: &Pass) {
        /// Should a pass panic, the calls waiting are dropped (their callers get an error) and
        /// the next call starts a pass again.
        struct Reset<'a>(&'a Mutex<State>);
        impl Drop for Reset<'_> {
            fn drop(&mut self) {
                if std::thread::panicking() {
                    let mut state = self.0.lock().unwrap_or_else(PoisonError::into_inner);
                    state.waiting.clear();
                    state.running = false;
                }
            }
        }
        let _reset = Reset(&self.state);
        loop {
            let waiting = {
                let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
                if state.waiting.is_empty() {
                    state.running = false;
                    return;
                }
                std::mem::take(&mut state.waiting)
            };
            let texts: Vec<String> = waiting
                .iter()
                .flat_map(|w| w.texts.iter().cloned())
                .collect();
            match pass(&texts) {
                Ok(vectors) => {
                    let mut vectors = vectors.into_iter();
                    for w in waiting {
                        let mine: Vec<Vec<f32>> = vectors.by_ref().take(w.texts.len()).collect();
                        let _ = w.reply.send(Ok(mine));
                    }
                }
                Err(message) => {
                    for w in waiting {
                        let _ = w.reply.send(Err(message.clone()));
                    }
                }
            }
        }
    }
}
