/// Adds two numbers.
#[mcpd::tool]
async fn add(a: i64, b: i64) -> i64 {
    a + b
}

fn main() -> std::process::ExitCode {
    mcpd::server!().tool(add()).run()
}
