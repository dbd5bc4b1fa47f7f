//! DNS-rebinding protection: the `Origin` and `Host` checks that run before
//! anything else on every MCP request.

use actix_web::http::header;
use actix_web::HttpRequest;

use crate::error::HttpError;

/// Which origins and hosts may reach the MCP endpoint.
#[derive(Debug, Clone)]
pub struct OriginPolicy {
    /// Allowed `Origin` values (`scheme://host[:port]`), compared whole and
    /// case-insensitively. `*` allows any.
    pub allowed_origins: Vec<String>,
    /// Allowed `Host` names (without port). `*` allows any.
    pub allowed_hosts: Vec<String>,
    /// Also allow any origin whose host is localhost, 127.0.0.1 or [::1].
    pub allow_localhost_origins: bool,
}

impl Default for OriginPolicy {
    fn default() -> Self {
        Self {
            allowed_origins: Vec::new(),
            allowed_hosts: vec!["localhost".into(), "127.0.0.1".into(), "[::1]".into()],
            allow_localhost_origins: true,
        }
    }
}

/// Whether `host` (any case) names this machine.
fn is_local(host: &str) -> bool {
    ["localhost", "127.0.0.1", "[::1]", "::1"]
        .iter()
        .any(|l| l.eq_ignore_ascii_case(host))
}

/// Host part of `host[:port]` (IPv6 literals keep their brackets).
fn host_name(authority: &str) -> &str {
    if authority.starts_with('[') {
        return authority.find(']').map_or(authority, |i| &authority[..=i]);
    }
    authority.rsplit_once(':').map_or(authority, |(h, port)| {
        if port.bytes().all(|b| b.is_ascii_digit()) {
            h
        } else {
            authority
        }
    })
}

/// The host a request was sent to: `Host` (HTTP/1.1) or `:authority`
/// (HTTP/2). Never a forwarded header (`Forwarded`, `X-Forwarded-Host`): a
/// page that rebinds its DNS name can set those itself.
pub fn request_host(req: &HttpRequest) -> Option<&str> {
    match req.headers().get(header::HOST) {
        Some(h) => Some(h.to_str().unwrap_or("").trim()),
        None => req.uri().authority().map(|a| a.as_str()),
    }
}

impl OriginPolicy {
    pub fn check(&self, req: &HttpRequest) -> Result<(), HttpError> {
        if let Some(origin) = req.headers().get(header::ORIGIN) {
            let origin = origin.to_str().unwrap_or("").trim();
            if !self.origin_allowed(origin) {
                return Err(HttpError::Forbidden(format!(
                    "Origin {origin:?} is not allowed; add it to the allowed origins in the server config"
                )));
            }
        }
        if let Some(host) = request_host(req) {
            if !self.host_allowed(host) {
                return Err(HttpError::Forbidden(format!(
                    "Host {host:?} is not allowed (DNS rebinding protection); add it to the allowed hosts in the server config"
                )));
            }
        }
        Ok(())
    }

    pub fn origin_allowed(&self, origin: &str) -> bool {
        if self
            .allowed_origins
            .iter()
            .any(|o| o == "*" || o.eq_ignore_ascii_case(origin))
        {
            return true;
        }
        if self.allow_localhost_origins {
            if let Some((scheme, authority)) = origin.split_once("://") {
                return matches!(scheme, "http" | "https") && is_local(host_name(authority));
            }
        }
        false
    }

    /// The admin listener's `Host` rule: an IP literal (how Prometheus and
    /// the kubelet address a pod), or a name the MCP endpoint allows. A DNS
    /// rebinding attack always arrives with a DNS name, so it is refused.
    pub fn admin_host_allowed(&self, host: &str) -> bool {
        let name = host_name(host);
        let ip = name.trim_start_matches('[').trim_end_matches(']');
        ip.parse::<std::net::IpAddr>().is_ok() || self.host_allowed(host)
    }

    fn host_allowed(&self, host: &str) -> bool {
        let name = host_name(host);
        self.allowed_hosts
            .iter()
            .any(|h| h == "*" || h.eq_ignore_ascii_case(name))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn localhost_origins_and_hosts_pass_others_do_not() {
        let p = OriginPolicy::default();
        assert!(p.origin_allowed("http://localhost:3000"));
        assert!(p.origin_allowed("http://127.0.0.1"));
        assert!(p.origin_allowed("https://[::1]:8443"));
        assert!(!p.origin_allowed("https://evil.example"));
        assert!(!p.origin_allowed("http://localhost.evil.example"));
        assert!(!p.origin_allowed("null"));
        assert!(p.host_allowed("localhost:8080"));
        assert!(p.host_allowed("127.0.0.1:1"));
        assert!(p.host_allowed("[::1]:80"));
        assert!(!p.host_allowed("evil.example.com"));
        assert!(!p.host_allowed("evil.example.com:8080"));
    }

    #[test]
    fn the_admin_listener_takes_ip_literals_and_allowed_names_only() {
        let p = OriginPolicy::default();
        assert!(p.admin_host_allowed("10.1.2.3:9090"));
        assert!(p.admin_host_allowed("[fd00::1]:9090"));
        assert!(p.admin_host_allowed("localhost:9090"));
        assert!(!p.admin_host_allowed("rebind.evil.example:9090"));
        assert!(!p.admin_host_allowed("10.1.2.3.evil.example"));
    }

    #[test]
    fn configured_origins_match_whole_and_case_insensitively() {
        let p = OriginPolicy {
            allowed_origins: vec!["https://App.example.com".into()],
            allow_localhost_origins: false,
            ..OriginPolicy::default()
        };
        assert!(p.origin_allowed("https://app.example.com"));
        assert!(!p.origin_allowed("http://app.example.com"));
        assert!(!p.origin_allowed("https://app.example.com:444"));
        assert!(!p.origin_allowed("http://localhost"));
    }
}
