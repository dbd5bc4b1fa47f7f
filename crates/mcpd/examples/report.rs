//! A task-capable tool. A 2026-07-28 client that declares the Tasks
//! extension gets a task id at once, may disconnect, and collects the
//! report with `tasks/get` (from any replica, with the Redis store); any
//! other call, in either era, gets the report as a plain result. The
//! handler is the same either way.
//!
//! Run: `cargo run -p mcpd --example report`, then call `report` from any
//! MCP client at http://127.0.0.1:8080/mcp.

use mcpd::prelude::*;

/// Writes a report on `topic`, one section at a time (1-5 sections).
#[mcpd::tool(task = "optional", read_only)]
async fn report(topic: String, sections: u32, ctx: RequestContext) -> Result<String, ToolError> {
    if !(1..=5).contains(&sections) {
        return Err(ToolError::InvalidArguments(
            "sections must be between 1 and 5".into(),
        ));
    }
    let mut out = format!("# {topic}\n");
    for n in 1..=sections {
        // A real report's slow part (a query, a model call) goes here.
        out.push_str(&format!("\n## Part {n} of {sections}\n"));
        ctx.progress(f64::from(n), Some(f64::from(sections)), None)
            .await?;
    }
    Ok(out)
}

fn main() -> std::process::ExitCode {
    mcpd::server!().tool(report()).run()
}
