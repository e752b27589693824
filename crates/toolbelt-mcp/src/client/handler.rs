//! The rmcp client handler: routes progress and list-changed notifications to the client.

use std::sync::Weak;

use rmcp::ClientHandler;
use rmcp::model::{ClientCapabilities, ClientConfig, Implementation, ProgressNotificationParam};
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

    fn get_info(&self) -> ClientConfig {
        ClientConfig::new(
            ClientCapabilities::default(),
            Implementation::new("toolbelt", env!("CARGO_PKG_VERSION")),
        )
    }
}
