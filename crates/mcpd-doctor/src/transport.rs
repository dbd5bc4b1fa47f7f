//! Getting there: the endpoint answers at all; on https, the certificate
//! (chain, name, expiry) and whether HTTP/2 is offered (ALPN).

use std::net::{SocketAddr, TcpStream, ToSocketAddrs};
use std::time::Duration;

use openssl::asn1::Asn1Time;
use openssl::nid::Nid;
use openssl::ssl::{HandshakeError, SslConnector, SslMethod, SslStream, SslVerifyMode};
use openssl::x509::X509VerifyResult;

use super::client::{secs, Http, Reply};
use super::report::Finding;

/// A certificate that expires sooner than this is a warning.
const EXPIRY_WARN_DAYS: i32 = 14;

/// `reachable`: what the first request (an `initialize`, without a token)
/// got, or why it got nothing.
pub fn reachable(http: &Http, first: Result<&Reply, &anyhow::Error>) -> Finding {
    let target = format!("{}:{}", host(http), port(http));
    let reply = match first {
        Ok(r) => r,
        Err(e) => {
            let why = format!("{e:#}");
            let fix = if why.contains("SSL") || why.contains("certificate") {
                "the TLS handshake failed (see tls): fix the certificate, or pass --insecure to run the other checks anyway"
            } else {
                "check the URL, DNS (or --resolve), and that a listener or load balancer accepts connections on that port"
            };
            return Finding::fail("reachable", format!("no answer from {target}: {why}"), fix);
        }
    };
    let status = reply.status.as_u16();
    let f = match status {
        300..=399 => Finding::fail(
            "reachable",
            format!(
                "POST {} answered {status}, a redirect to {}",
                http.url.path(),
                reply.header("location").unwrap_or("?")
            ),
            "give clients the final URL: MCP clients POST and do not follow redirects reliably",
        ),
        404 | 405 => Finding::fail(
            "reachable",
            format!("POST {} answered {status}: no MCP endpoint at this path", http.url.path()),
            "check the path (mcpd serves http.path, /mcp by default) and the proxy's route to it",
        ),
        500..=599 => Finding::fail(
            "reachable",
            format!("POST {} answered {status}: {}", http.url.path(), reply.said()),
            "a 502/503/504 comes from a proxy that cannot reach the server: check the upstream (Service, port, readiness)",
        ),
        _ => Finding::pass(
            "reachable",
            format!(
                "POST {} answered {status} in {} ms",
                http.url.path(),
                reply.head_after.as_millis()
            ),
        ),
    };
    f.with("status", status)
        .with("seconds", secs(reply.head_after))
}

fn host(http: &Http) -> String {
    http.url.host_str().unwrap_or("").to_owned()
}

fn port(http: &Http) -> u16 {
    http.url.port_or_known_default().unwrap_or(443)
}

/// `tls`, `tls.expiry`, `http2`: one TLS handshake as a client makes it
/// (verified), and one more without verification when that fails, to see
/// the certificate anyway.
pub async fn tls(http: &Http) -> Vec<Finding> {
    if http.url.scheme() != "https" {
        return vec![
            Finding::skip("tls", "plain http: TLS not checked"),
            Finding::skip("tls.expiry", "plain http: TLS not checked"),
            Finding::skip(
                "http2",
                "plain http: HTTP/2 not checked (clients use it over TLS)",
            ),
        ];
    }
    let name = host(http);
    let pinned = http
        .resolve
        .iter()
        .find(|(h, _)| h.eq_ignore_ascii_case(&name))
        .map(|(_, ip)| SocketAddr::new(*ip, port(http)));
    let (port, timeout, insecure) = (port(http), http.timeout, http.insecure);
    let probe = tokio::task::spawn_blocking(move || probe(&name, port, pinned, timeout)).await;
    let peer = match probe {
        Ok(Ok(p)) => p,
        Ok(Err(e)) => {
            let fix = "check the certificate and key served on this port (mcpd: [tls]; behind an ingress: its TLS Secret)";
            return vec![
                Finding::fail("tls", format!("TLS handshake failed: {e}"), fix),
                Finding::skip("tls.expiry", "no certificate (the handshake failed)"),
                Finding::skip("http2", "no TLS session (the handshake failed)"),
            ];
        }
        Err(e) => return vec![Finding::skip("tls", format!("the TLS probe stopped: {e}"))],
    };
    vec![chain(&peer, insecure), expiry(&peer), http2(&peer)]
}

/// What one TLS handshake showed.
struct Peer {
    /// `Err(reason)` when the chain or the name does not verify.
    verified: Result<(), String>,
    alpn: Option<String>,
    subject: String,
    issuer: String,
    days_left: Option<i32>,
    not_after: String,
}

fn probe(
    name: &str,
    port: u16,
    pinned: Option<SocketAddr>,
    timeout: Duration,
) -> Result<Peer, String> {
    let addr = match pinned {
        Some(a) => a,
        None => (name, port)
            .to_socket_addrs()
            .map_err(|e| format!("cannot resolve {name}: {e}"))?
            .next()
            .ok_or_else(|| format!("{name} has no address"))?,
    };
    let (verified, stream) = match handshake(name, addr, true, timeout) {
        Ok(s) => (Ok(()), s),
        Err(Refused::Unverified(why)) => match handshake(name, addr, false, timeout) {
            Ok(s) => (Err(why), s),
            Err(Refused::Unverified(e) | Refused::Other(e)) => return Err(e),
        },
        Err(Refused::Other(e)) => return Err(e),
    };
    let ssl = stream.ssl();
    let cert = ssl
        .peer_certificate()
        .ok_or("the server sent no certificate")?;
    let cn = |n: &openssl::x509::X509NameRef| {
        n.entries_by_nid(Nid::COMMONNAME)
            .next()
            .and_then(|e| e.data().to_string().ok())
            .unwrap_or_default()
    };
    let days_left = Asn1Time::days_from_now(0)
        .and_then(|now| now.diff(cert.not_after()))
        .ok()
        .map(|d| d.days);
    Ok(Peer {
        verified,
        alpn: ssl
            .selected_alpn_protocol()
            .map(|p| String::from_utf8_lossy(p).into_owned()),
        subject: cn(cert.subject_name()),
        issuer: cn(cert.issuer_name()),
        days_left,
        not_after: cert.not_after().to_string(),
    })
}

enum Refused {
    /// The handshake would work but the certificate does not verify.
    Unverified(String),
    Other(String),
}

fn handshake(
    name: &str,
    addr: SocketAddr,
    verify: bool,
    timeout: Duration,
) -> Result<SslStream<TcpStream>, Refused> {
    let other = |e: &dyn std::fmt::Display| Refused::Other(e.to_string());
    let tcp = TcpStream::connect_timeout(&addr, timeout)
        .map_err(|e| Refused::Other(format!("cannot connect to {addr}: {e}")))?;
    tcp.set_read_timeout(Some(timeout)).map_err(|e| other(&e))?;
    tcp.set_write_timeout(Some(timeout))
        .map_err(|e| other(&e))?;
    let mut b = SslConnector::builder(SslMethod::tls()).map_err(|e| other(&e))?;
    b.set_alpn_protos(b"\x02h2\x08http/1.1")
        .map_err(|e| other(&e))?;
    if !verify {
        b.set_verify(SslVerifyMode::NONE);
    }
    let config = b
        .build()
        .configure()
        .map_err(|e| other(&e))?
        .verify_hostname(verify);
    config.connect(name, tcp).map_err(|e| match e {
        HandshakeError::Failure(m) if m.ssl().verify_result() != X509VerifyResult::OK => {
            Refused::Unverified(m.ssl().verify_result().error_string().to_owned())
        }
        HandshakeError::Failure(m) => other(m.error()),
        HandshakeError::SetupFailure(e) => other(&e),
        HandshakeError::WouldBlock(_) => Refused::Other("the handshake timed out".into()),
    })
}

fn chain(peer: &Peer, insecure: bool) -> Finding {
    let f = match &peer.verified {
        Ok(()) => Finding::pass(
            "tls",
            format!(
                "the certificate for {} (issued by {}) verifies: chain and name",
                peer.subject, peer.issuer
            ),
        ),
        Err(why) => {
            let message = format!(
                "the certificate for {} (issued by {}) does not verify: {why}",
                peer.subject, peer.issuer
            );
            let fix = "serve the full chain (certificate and intermediates) for the name clients use; a private CA needs every client configured to trust it";
            if insecure {
                Finding::warn("tls", format!("{message} (accepted: --insecure)"), fix)
            } else {
                Finding::fail("tls", message, fix)
            }
        }
    };
    f.with("subject", peer.subject.clone())
        .with("issuer", peer.issuer.clone())
}

fn expiry(peer: &Peer) -> Finding {
    let Some(days) = peer.days_left else {
        return Finding::skip("tls.expiry", "the certificate's expiry could not be read");
    };
    let f = if days < 0 {
        Finding::fail(
            "tls.expiry",
            format!(
                "the certificate expired {} days ago ({})",
                -days, peer.not_after
            ),
            "renew it (cert-manager: check the Certificate's status and events)",
        )
    } else if days < EXPIRY_WARN_DAYS {
        Finding::warn(
            "tls.expiry",
            format!("the certificate expires in {days} days ({})", peer.not_after),
            "renew it now; automated renewal (cert-manager, ACME) usually renews 30 days ahead, so check why it has not",
        )
    } else {
        Finding::pass(
            "tls.expiry",
            format!(
                "the certificate is valid for {days} more days ({})",
                peer.not_after
            ),
        )
    };
    f.with("days_left", days)
        .with("not_after", peer.not_after.clone())
}

fn http2(peer: &Peer) -> Finding {
    let alpn = peer.alpn.clone().unwrap_or_default();
    let f = if alpn == "h2" {
        Finding::pass("http2", "HTTP/2 is offered (ALPN h2)")
    } else {
        Finding::warn(
            "http2",
            format!(
                "HTTP/2 is not offered (ALPN: {})",
                if alpn.is_empty() { "none" } else { &alpn }
            ),
            "enable HTTP/2 on the TLS terminator: over HTTP/1.1 each SSE stream holds a connection, and browsers allow six per host",
        )
    };
    f.with("alpn", alpn)
}
