use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// Counts a visit; returns the count so far.
#[mcpd::tool]
async fn visit(#[state] visits: Arc<AtomicU64>) -> u64 {
    visits.fetch_add(1, Ordering::Relaxed) + 1
}

/// The visits counted so far.
#[mcpd::tool(read_only)]
async fn visits(#[state] visits: Arc<AtomicU64>) -> u64 {
    visits.load(Ordering::Relaxed)
}

fn main() -> std::process::ExitCode {
    let count = Arc::new(AtomicU64::new(0));
    mcpd::server!()
        .tool(visit(count.clone()))
        .tool(visits(count))
        .run()
}
