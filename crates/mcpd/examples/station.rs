use mcpd::prelude::*;

/// Adds two numbers.
#[mcpd::tool(read_only)]
async fn add(a: i64, b: i64) -> i64 {
    a + b
}

/// A forecast for a city, with progress.
#[mcpd::tool]
async fn forecast(city: String, days: u8, ctx: RequestContext) -> Result<String, PeerError> {
    for day in 1..=days {
        ctx.progress(day.into(), Some(days.into()), None).await?;
    }
    Ok(format!("{city}: sunny for {days} days"))
}

/// The station's settings.
#[mcpd::resource("config://station", mime = "application/json")]
async fn settings() -> &'static str {
    r#"{"units": "metric"}"#
}

/// Today's reading in a city.
#[mcpd::resource("weather://{city}/today", complete(city = ["Lisbon", "London", "Lima"]))]
async fn today(city: String) -> String {
    format!("{city}: 21 °C")
}

/// Asks for a travel plan.
#[mcpd::prompt(complete(city = ["Lisbon", "London", "Lima"]))]
async fn plan(city: String, #[describe("Days of the trip")] days: Option<u8>) -> String {
    format!("Plan {} days in {city}.", days.unwrap_or(2))
}

fn main() -> std::process::ExitCode {
    mcpd::server!()
        .tool(add())
        .tool(forecast())
        .resources(settings())
        .resources(today())
        .prompts(plan())
        .run()
}
