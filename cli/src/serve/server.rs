//! rmcp's `ServerHandler` for the gateway: `initialize`, `tools/list`
//! (every tool, or the catalog's three meta-tools) and `tools/call`, with
//! the client's cancellation and progress token.

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, Implementation, ListToolsResult,
    PaginatedRequestParams, ServerCapabilities, ServerConfig,
};
use rmcp::service::{NotificationContext, RequestContext};
use rmcp::{ErrorData as McpError, RoleServer, ServerHandler};

use super::catalog;
use super::gateway::{Expose, Gateway};
use super::listing;

impl Gateway {
    /// What the client sees in `tools/list`.
    pub(crate) fn listed_tools(&self) -> Vec<rmcp::model::Tool> {
        match self.expose {
            Expose::Tools => listing::mcp_tools(&self.host.tools(), &self.shape),
            Expose::Catalog => catalog::meta_tools(),
        }
    }
}

impl ServerHandler for Gateway {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(
            ServerCapabilities::builder()
                .enable_tools()
                .enable_tool_list_changed()
                .build(),
        )
        .with_server_info(Implementation::new("exthost", env!("CARGO_PKG_VERSION")))
        .with_instructions(match self.expose {
            Expose::Tools => {
                "exthost serves the tools of its extensions; each extension starts on the first \
                 call of one of its tools."
            }
            Expose::Catalog => {
                "exthost serves a catalog: search_tools finds tools by words, describe_tool shows \
                 one tool's input schema, call_tool calls it by name."
            }
        })
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
        Ok(ListToolsResult::with_all_items(self.listed_tools()))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        // A bounded number of calls in flight per session; beyond it, a
        // JSON-RPC error with a stable code, answered at once.
        let Ok(_slot) = self.calls.clone().try_acquire_owned() else {
            return Err(super::gateway::too_many_calls(self.max_calls));
        };
        let progress = context
            .meta
            .get_progress_token()
            .map(|token| (token, context.peer.clone()));
        let result = match self.expose {
            Expose::Tools => {
                self.call(&request.name, request.arguments, context.ct, progress)
                    .await?
            }
            Expose::Catalog => {
                catalog::call(self, &request.name, request.arguments, context.ct, progress).await?
            }
        };
        Ok(result.into())
    }

    async fn on_initialized(&self, _context: NotificationContext<RoleServer>) {
        if self.warm {
            self.warm_up();
        }
    }
}
