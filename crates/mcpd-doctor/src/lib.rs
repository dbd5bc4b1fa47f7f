//! `mcpd doctor URL`: checks a deployed MCP endpoint from outside, as a
//! client would, and says for each finding (pass, warn, fail, skip) what
//! to fix.
//!
//! Most trouble with remote MCP servers is in front of the server: a proxy
//! that buffers SSE, an idle timeout that cuts quiet streams, metadata that
//! names another URL, a Host allow-list that refuses the public name. The
//! doctor needs nothing from the server but MCP: it uses mcpd's demo tools
//! when they are there and says what it could not check when they are not,
//! so it works against other MCP servers too.
//!
//! Layout: [`Options`] (the arguments, `doctor/options.rs`), [`report`]
//! (findings; the human and the JSON report), [`client`] (timed HTTP and
//! MCP requests of both eras), [`reply`] (JSON and SSE answers, timed), and
//! one file per group of checks: [`transport`] (reachable, TLS, HTTP/2),
//! [`access`] (Host, CORS), [`auth`] (challenge, metadata, issuer, JWKS,
//! scopes, token), [`eras`] (which protocol revisions answer), [`streams`]
//! (SSE buffering, idle streams, resumption), [`affinity`] (a session over
//! new connections). This file runs the checks in order; no file under it
//! imports it.

use std::io::Write;
use std::time::Duration;

mod access;
mod affinity;
mod auth;
mod client;
mod eras;
mod options;
mod reply;
mod report;
mod streams;
mod transport;

pub use options::Options;

use client::{initialize, Era, Http};
use report::{Finding, Report, Status};

/// Runs the doctor and prints its report; the process exit status: 0 when
/// nothing failed, 1 when a check failed, 2 when it could not start.
pub fn main(options: Options) -> u8 {
    let token = options
        .token
        .clone()
        .or_else(|| std::env::var("MCPD_DOCTOR_TOKEN").ok())
        .filter(|t| !t.is_empty());
    let http = match Http::new(&options, token) {
        Ok(h) => h,
        Err(e) => {
            eprintln!("mcpd doctor: {e:#}");
            return 2;
        }
    };
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build();
    let report = match runtime {
        Ok(rt) => rt.block_on(examine(&http, &options)),
        Err(e) => {
            eprintln!("mcpd doctor: cannot start: {e}");
            return 2;
        }
    };
    let text = match options.json {
        true => format!("{:#}\n", report.json()),
        false => report.human(),
    };
    // A closed stdout (`| head`) is no reason to fail: the status says it.
    let _ = std::io::stdout().lock().write_all(text.as_bytes());
    u8::from(report.failed())
}

/// Every check against the endpoint, in order; a check that cannot run
/// (the endpoint is unreachable, refuses the host, needs a token) skips
/// the rest with the reason.
async fn examine(http: &Http, options: &Options) -> Report {
    let mut report = Report::new(&options.url);
    report.extend(transport::tls(http).await);
    // What a new client does first: initialize, without a token.
    let first = initialize(http, "2025-11-25", false).await;
    let reachable = transport::reachable(http, first.as_ref().map(|(r, _)| r));
    let answered = reachable.status == Status::Pass;
    report.push(reachable);
    let (first, session) = match first {
        Ok(f) if answered => f,
        _ => return finish(report, "the endpoint did not answer (see reachable)"),
    };
    if let Some(s) = session {
        s.close().await;
    }
    let host = access::host(http, &first);
    let refused = host.status == Status::Fail;
    report.push(host);
    if refused {
        return finish(report, "the server refuses the host name (see host)");
    }
    let resource = options.resource.as_deref().unwrap_or(&options.url);
    report.extend(auth::check(http, &first, resource).await);
    report.push(access::cors(http, options.origin.as_deref()).await);
    if first.status == reqwest::StatusCode::UNAUTHORIZED {
        if !http.has_token() {
            return finish(
                report,
                "the endpoint asks for a token: pass --token to run this check",
            );
        }
        if report
            .get("auth.token")
            .is_some_and(|f| f.status == Status::Fail)
        {
            return finish(report, "the token is refused (see auth.token)");
        }
    }
    let eras = eras::check(http).await;
    report.extend(eras.findings);
    let Some(session) = eras.session else {
        let reason = if eras.stateless {
            "the session era is not served: streams, resumption and sessions are session-era checks"
        } else {
            "no protocol era answered (see era.session)"
        };
        return finish(report, reason);
    };
    let version = match &session.era {
        Era::Session { version, .. } => version.clone(),
        Era::Stateless => "2025-11-25".into(),
    };
    // The idle stream takes longest: it runs beside the rest, on its own session.
    let idle = streams::idle(http, &version, Duration::from_secs(options.idle_secs));
    let rest = session_checks(&session, options);
    let (idle, rest) = tokio::join!(idle, rest);
    session.close().await;
    report.push(idle);
    report.extend(rest);
    finish(report, "not reached")
}

/// Progress timing and resumption (with the demo `countdown` tool, or the
/// one `--stream-tool` names), then the session over new connections.
async fn session_checks(session: &client::Mcp<'_>, options: &Options) -> Vec<Finding> {
    let mut found = Vec::new();
    let named = options.stream_tool.as_deref();
    match streams::stream_tool(session, named, options.stream_args.as_deref()).await {
        Ok(Some(tool)) => {
            found.push(streams::unbuffered(session, &tool).await);
            found.push(streams::resume(session, &tool).await);
        }
        Ok(None) => {
            let why = "the server has no countdown tool (mcpd's demo tool set): progress and resumption not checked; pass --stream-tool NAME (and --stream-args JSON) naming a tool that reports progress for a few seconds, e.g. an upstream's behind a gateway-only mcpd";
            found.push(Finding::skip("sse.unbuffered", why));
            found.push(Finding::skip("sse.resume", why));
        }
        // Asked for by name: not finding it is a failure.
        Err(e) if named.is_some() => {
            let why = format!("no tool for the stream checks: {e}");
            let fix = "pass --stream-tool a tool tools/list lists, and --stream-args a JSON object";
            found.push(Finding::fail("sse.unbuffered", &why, fix));
            found.push(Finding::skip("sse.resume", why));
        }
        Err(e) => {
            let why = format!("tools/list failed: {e}");
            found.push(Finding::skip("sse.unbuffered", &why));
            found.push(Finding::skip("sse.resume", why));
        }
    }
    found.push(affinity::check(session).await);
    found
}

fn finish(mut report: Report, reason: &str) -> Report {
    report.skip_rest(reason);
    report.finish();
    report
}
