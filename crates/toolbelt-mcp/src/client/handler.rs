//! The rmcp client handler: routes progress and list-changed notifications to the client.

use std::sync::Weak;

use rmcp::ClientHandler;
use rmcp::model::{
    ClientCapabilities, ClientConfig, Implementation, ProgressNotificationParam, ProtocolVersion,
};
use rmcp::service::{NotificationContext, RoleClient};

use super::Shared;

pub(crate) struct ClientHandlerImpl {
    shared: Weak<Shared>,
}

impl ClientHandlerImpl {
    pub(crate) fn new(shared: Weak<Shared>) -> Self {
        Self { shared }
    }
}

impl ClientHandler for ClientHandlerImpl {
    async fn on_progress(
        &self,
        params: ProgressNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        if let Some(shared) = self.shared.upgrade() {
            shared.on_progress(
                &params.progress_token,
                params.progress,
                params.total,
                params.message,
            );
        }
    }

    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        if let Some(shared) = self.shared.upgrade() {
            shared.notify_list_changed();
        }
    }

    /// What `initialize` announces: the revision the handshake belongs to (2025-11-25; the
    /// 2026-07-28 revision has no `initialize`, so announcing it there is a version mismatch).
    fn get_info(&self) -> ClientConfig {
        ClientConfig::new(
            ClientCapabilities::default(),
            Implementation::new("toolbelt", env!("CARGO_PKG_VERSION")),
        )
        .with_protocol_version(ProtocolVersion::LATEST_WITH_INITIALIZE)
    }
}
