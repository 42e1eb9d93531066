//! rmcp's `ServerHandler` for the gateway: `initialize`, `tools/list`
//! (every tool, or the catalog's three meta-tools) and `tools/call`, with
//! the client's cancellation and progress token; the prompts and resources
//! of every extension (`prompts.rs`, `resources.rs`); and the client's
//! capabilities, forwarded (`capabilities.rs`).

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CompleteRequestParams, CompleteResult,
    GetPromptRequestParams, GetPromptResponse, Implementation, ListPromptsResult,
    ListResourceTemplatesResult, ListResourcesResult, ListToolsResult, PaginatedRequestParams,
    ReadResourceRequestParams, ReadResourceResponse, ServerCapabilities, ServerConfig,
    SubscribeRequestParams, UnsubscribeRequestParams,
};
use rmcp::service::{NotificationContext, RequestContext};
use rmcp::{ErrorData as McpError, RoleServer, ServerHandler};

use super::catalog;
use super::gateway::{Expose, Gateway};
use super::{completion, listing, prompts, resources};

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
        let mut capabilities = ServerCapabilities::builder()
            .enable_tools()
            .enable_tool_list_changed()
            .enable_prompts()
            .enable_prompts_list_changed()
            .enable_resources()
            .enable_resources_subscribe()
            .enable_resources_list_changed()
            .build();
        if completion::offered(self) {
            capabilities.completions = Some(Default::default());
        }
        ServerConfig::new(capabilities)
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

    async fn list_prompts(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListPromptsResult, McpError> {
        Ok(prompts::list(self))
    }

    async fn get_prompt(
        &self,
        request: GetPromptRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<GetPromptResponse, McpError> {
        Ok(prompts::get(self, request, context.ct).await?.into())
    }

    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, McpError> {
        Ok(resources::list(self))
    }

    async fn list_resource_templates(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourceTemplatesResult, McpError> {
        Ok(resources::templates(self))
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, McpError> {
        Ok(resources::read(self, request, context.ct).await?.into())
    }

    #[allow(deprecated)]
    async fn subscribe(
        &self,
        request: SubscribeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        resources::subscription(self, "resources/subscribe", &request.uri, context.ct).await
    }

    #[allow(deprecated)]
    async fn unsubscribe(
        &self,
        request: UnsubscribeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        resources::subscription(self, "resources/unsubscribe", &request.uri, context.ct).await
    }

    async fn complete(
        &self,
        request: CompleteRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CompleteResult, McpError> {
        completion::complete(self, request, context.ct).await
    }

    async fn on_roots_list_changed(&self, _context: NotificationContext<RoleServer>) {
        self.bridge.roots_list_changed().await;
    }

    async fn on_initialized(&self, context: NotificationContext<RoleServer>) {
        self.connect_client(context.peer);
        if self.warm {
            self.warm_up();
        }
    }
}
