//! A custom MCP server: mcpd plus one tool of your own, in one small file.
//!
//! Run: `cargo run -p mcpd --example weather -- --toolset none`
//! then call `forecast` from any MCP client at http://127.0.0.1:8080/mcp.

use std::process::ExitCode;

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
#[mcpd::tool]
async fn forecast(args: Forecast, ctx: RequestContext) -> Result<CallToolResult, ToolError> {
    if !(1..=7).contains(&args.days) {
        return Err(ToolError::InvalidArguments(
            "days must be between 1 and 7".into(),
        ));
    }
    ctx.log(
        LoggingLevel::Info,
        format!("forecasting {} days for {}", args.days, args.city),
    )
    .await?;
    for day in 1..=args.days {
        ctx.progress(f64::from(day), Some(f64::from(args.days)), None)
            .await?;
    }
    Ok(CallToolResult::text(format!(
        "{}: sunny for the next {} days",
        args.city, args.days
    )))
}

fn main() -> ExitCode {
    let config = match mcpd::load_config() {
        Ok(Some(c)) => c,
        Ok(None) => return ExitCode::SUCCESS, // --check-config
        Err(e) => {
            eprintln!("weather: {e}");
            return ExitCode::from(2);
        }
    };
    let result = mcpd::run(&config, |registry| {
        registry.add_tool(Arc::new(forecast()));
    });
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("weather: {e:#}");
            ExitCode::FAILURE
        }
    }
}
