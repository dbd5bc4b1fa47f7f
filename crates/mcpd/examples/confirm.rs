use mcpd::prelude::*;

/// The form the user fills in.
#[derive(Deserialize, JsonSchema)]
struct Confirm {
    /// Send the money?
    confirm: bool,
}

/// Sends money, once the user confirms.
#[mcpd::tool(destructive)]
async fn transfer(amount: u32, ctx: RequestContext) -> Result<String, ToolError> {
    match ctx.elicit::<Confirm>(format!("Send {amount} €?")).await? {
        Elicited::Accepted(Confirm { confirm: true }) => Ok(format!("sent {amount} €")),
        Elicited::Accepted(_) | Elicited::Declined => Ok("not sent".into()),
        Elicited::Cancelled => Err(ToolError::Failed("cancelled by the user".into())),
    }
}

fn main() -> std::process::ExitCode {
    mcpd::server!().tool(transfer()).run()
}
