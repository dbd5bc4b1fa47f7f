//! `mcpd doctor`'s arguments: a leaf, so the client reads them without
//! importing the file that runs the checks.

use clap::Args;

/// `mcpd doctor`'s arguments.
#[derive(Debug, Clone, Args)]
pub struct Options {
    /// The MCP endpoint as clients reach it, e.g. https://mcp.example.com/mcp.
    #[arg(value_name = "URL")]
    pub url: String,
    /// A bearer token for the endpoint (or MCPD_DOCTOR_TOKEN): checks the
    /// token, and runs the MCP checks on an endpoint that needs one.
    #[arg(long, value_name = "TOKEN")]
    pub token: Option<String>,
    /// Also check CORS for a browser client on this origin, e.g. https://app.example.com.
    #[arg(long, value_name = "ORIGIN")]
    pub origin: Option<String>,
    /// Print one JSON document with every finding instead of the report.
    #[arg(long)]
    pub json: bool,
    /// How long to hold a quiet GET stream open (finds proxy idle timeouts).
    #[arg(long, value_name = "SECS", default_value_t = 90)]
    pub idle_secs: u64,
    /// How long a single request may take, in seconds.
    #[arg(long, value_name = "SECS", default_value_t = 10)]
    pub timeout: u64,
    /// The URL clients use, when URL is another way in (e.g. the Service
    /// inside the cluster): the protected-resource metadata must name it.
    #[arg(long, value_name = "URL")]
    pub resource: Option<String>,
    /// Connect to ADDRESS for HOST (like curl --resolve, without the port),
    /// e.g. mcp.example.com:203.0.113.7 to check a deployment before DNS points at it.
    #[arg(long, value_name = "HOST:ADDRESS")]
    pub resolve: Vec<String>,
    /// Accept a certificate that does not verify (reported as a warning).
    #[arg(long)]
    pub insecure: bool,
    /// The tool that checks SSE buffering and resumption, when the server
    /// has no `countdown` (mcpd's demo set), e.g. a gateway-only mcpd's
    /// `everything__longRunningOperation`: one that reports progress for a
    /// few seconds before its result.
    #[arg(long, value_name = "NAME")]
    pub stream_tool: Option<String>,
    /// The arguments of --stream-tool, as a JSON object.
    #[arg(long, value_name = "JSON", requires = "stream_tool")]
    pub stream_args: Option<String>,
}
