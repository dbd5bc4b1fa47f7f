//! A tool over an arguments struct, with logging and progress: mcpd plus
//! one tool of your own.
//!
//! Run: `cargo run -p mcpd --example weather`, then call `forecast` from
//! any MCP client at http://127.0.0.1:8080/mcp.

use mcpd::prelude::*;

/// The tool's arguments; the input schema clients see is derived from this type.
#[derive(Deserialize, JsonSchema)]
struct Forecast {
    /// City name, e.g. "Lisbon".
    city: String,
    /// Days ahead (1-7).
    days: u8,
}

/// Weather forecast for a city.
#[mcpd::tool(read_only)]
async fn forecast(args: Forecast, ctx: RequestContext) -> Result<String, ToolError> {
    if !(1..=7).contains(&args.days) {
        return Err(ToolError::InvalidArguments(
            "days must be between 1 and 7".into(),
        ));
    }
    let note = format!("forecasting {} days for {}", args.days, args.city);
    ctx.log(LoggingLevel::Info, note).await?;
    for day in 1..=args.days {
        ctx.progress(f64::from(day), Some(f64::from(args.days)), None)
            .await?;
    }
    Ok(format!(
        "{}: sunny for the next {} days",
        args.city, args.days
    ))
}

fn main() -> std::process::ExitCode {
    mcpd::server!().tool(forecast()).run()
}
