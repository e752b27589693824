//! [`CappedSessions`]: rmcp's in-memory session manager with a cap on the sessions open at
//! once, shared by every endpoint that holds the same [`SessionCount`].

use std::collections::HashSet;
use std::sync::{Arc, Mutex, PoisonError};

use futures::Stream;
use rmcp::model::{ClientJsonRpcMessage, ServerJsonRpcMessage};
use rmcp::transport::streamable_http_server::session::ServerSseMessage;
use rmcp::transport::streamable_http_server::session::local::{
    LocalSessionManager, LocalSessionManagerError,
};
use rmcp::transport::streamable_http_server::{SessionId, SessionManager};

/// The sessions open across the endpoints sharing it, and how many may be.
#[derive(Debug)]
pub(crate) struct SessionCount {
    /// The open sessions, and how many are being created.
    open: Mutex<(HashSet<SessionId>, usize)>,
    max: usize,
}

impl SessionCount {
    pub(crate) fn new(max: usize) -> Arc<Self> {
        Arc::new(Self {
            open: Mutex::default(),
            max,
        })
    }

    /// How many may be open at once.
    pub(crate) fn max(&self) -> usize {
        self.max
    }

    /// Whether a new session would go over the cap.
    pub(crate) fn is_full(&self) -> bool {
        let open = self.open.lock().unwrap_or_else(PoisonError::into_inner);
        open.0.len() + open.1 >= self.max
    }
}

/// Why a session operation failed.
#[derive(Debug, thiserror::Error)]
pub(crate) enum CappedError {
    /// The cap is reached.
    #[error("too many MCP sessions are open (the cap is {max})")]
    Full {
        /// The cap.
        max: usize,
    },
    /// rmcp's own error.
    #[error(transparent)]
    Local(#[from] LocalSessionManagerError),
}

/// A [`LocalSessionManager`] that counts its sessions in a shared [`SessionCount`].
#[derive(Debug)]
pub(crate) struct CappedSessions {
    inner: LocalSessionManager,
    count: Arc<SessionCount>,
}

impl CappedSessions {
    pub(crate) fn new(count: Arc<SessionCount>) -> Self {
        Self {
            inner: LocalSessionManager::default(),
            count,
        }
    }
}

type LocalTransport = <LocalSessionManager as SessionManager>::Transport;

impl SessionManager for CappedSessions {
    type Error = CappedError;
    type Transport = LocalTransport;

    async fn create_session(&self) -> Result<(SessionId, Self::Transport), Self::Error> {
        // Checked again here (the router checks first to answer with a clear status) so that
        // concurrent initialisations cannot pass the cap together.
        {
            let mut open = self
                .count
                .open
                .lock()
                .unwrap_or_else(PoisonError::into_inner);
            if open.0.len() + open.1 >= self.count.max {
                return Err(CappedError::Full {
                    max: self.count.max,
                });
            }
            open.1 += 1;
        }
        let created = self.inner.create_session().await;
        let mut open = self
            .count
            .open
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        open.1 -= 1;
        let (id, transport) = created?;
        open.0.insert(id.clone());
        Ok((id, transport))
    }

    async fn initialize_session(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<ServerJsonRpcMessage, Self::Error> {
        Ok(self.inner.initialize_session(id, message).await?)
    }

    async fn has_session(&self, id: &SessionId) -> Result<bool, Self::Error> {
        Ok(self.inner.has_session(id).await?)
    }

    async fn close_session(&self, id: &SessionId) -> Result<(), Self::Error> {
        let result = self.inner.close_session(id).await;
        self.count
            .open
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .0
            .remove(id);
        Ok(result?)
    }

    async fn create_stream(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        Ok(self.inner.create_stream(id, message).await?)
    }

    async fn accept_message(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<(), Self::Error> {
        Ok(self.inner.accept_message(id, message).await?)
    }

    async fn create_standalone_stream(
        &self,
        id: &SessionId,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        Ok(self.inner.create_standalone_stream(id).await?)
    }

    async fn resume(
        &self,
        id: &SessionId,
        last_event_id: String,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        Ok(self.inner.resume(id, last_event_id).await?)
    }
}
