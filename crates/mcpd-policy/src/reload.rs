//! The policy set in use: loaded at start (an invalid one stops start-up),
//! then looked at again every few seconds and swapped when its files
//! changed and the new set validates; an invalid change is logged and the
//! old set kept. Every call's decision is one audit line.

use std::path::PathBuf;
use std::sync::{Arc, RwLock};
use std::time::Duration;

use mcpd_auth::{Ask, Decision, Policy, Principal};

use crate::engine::Engine;
use crate::load::load;

/// The policies of `[policy]`, reloaded when their files change.
pub struct Policies {
    paths: Vec<PathBuf>,
    current: RwLock<Arc<Engine>>,
    /// The files' contents the current set was built from.
    seen: RwLock<Vec<u8>>,
}

impl std::fmt::Debug for Policies {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Policies")
            .field("paths", &self.paths)
            .finish()
    }
}

impl Policies {
    /// Loads `paths` (files, or directories of `.cedar` files): the first
    /// problem, on one line, when they do not validate.
    pub fn load(paths: Vec<PathBuf>) -> Result<Arc<Self>, String> {
        // Seen before loaded: an edit in between is loaded by the next look.
        let seen = snapshot(&paths);
        let engine = load(&paths)?;
        tracing::info!(policies = engine.len(), "policies loaded");
        Ok(Arc::new(Self {
            paths,
            current: RwLock::new(Arc::new(engine)),
            seen: RwLock::new(seen),
        }))
    }

    /// The set in use.
    pub fn engine(&self) -> Arc<Engine> {
        self.current
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// Reloads when the files changed: `Ok(true)` swapped, `Ok(false)`
    /// unchanged, `Err` the new set is refused (the old one stays).
    pub fn reload(&self) -> Result<bool, String> {
        let now = snapshot(&self.paths);
        if *self.seen.read().unwrap_or_else(|p| p.into_inner()) == now {
            return Ok(false);
        }
        // Seen either way: a refused change is reported once, not every
        // poll; the next edit is looked at again.
        *self.seen.write().unwrap_or_else(|p| p.into_inner()) = now;
        let engine = load(&self.paths)?;
        tracing::info!(policies = engine.len(), "policies reloaded");
        *self.current.write().unwrap_or_else(|p| p.into_inner()) = Arc::new(engine);
        Ok(true)
    }

    /// Polls the files every `every` (on the current tokio runtime).
    pub fn watch(self: &Arc<Self>, every: Duration) {
        let weak = Arc::downgrade(self);
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(every);
            tick.tick().await;
            loop {
                tick.tick().await;
                let Some(p) = weak.upgrade() else { return };
                if let Err(e) = p.reload() {
                    tracing::error!(error = %e, "the changed policies are refused: the previous ones stay in force");
                }
            }
        });
    }
}

/// Everything the policy paths hold (names and contents), to notice a
/// change however the files were replaced (a ConfigMap swaps a link).
fn snapshot(paths: &[PathBuf]) -> Vec<u8> {
    let mut all = Vec::new();
    for p in paths {
        let mut files = vec![p.clone()];
        if let Ok(dir) = std::fs::read_dir(p) {
            files = dir.filter_map(|e| e.ok().map(|e| e.path())).collect();
            files.sort();
        }
        for f in files {
            all.extend_from_slice(f.to_string_lossy().as_bytes());
            all.push(0);
            all.extend(std::fs::read(&f).unwrap_or_default());
            all.push(0);
        }
    }
    all
}

impl Policy for Policies {
    fn decide(&self, principal: &Principal, ask: &Ask<'_>) -> Decision {
        let d = self.engine().decide(principal, ask);
        let outcome = if d.allowed { "allow" } else { "deny" };
        if ask.listing {
            tracing::debug!(target: "mcpd::audit", principal = %principal.key(), action = ask.target.action(), resource = ask.target.name(), server = ask.server, decision = outcome, policies = ?d.policies, "policy decision (list)");
        } else {
            tracing::info!(target: "mcpd::audit", principal = %principal.key(), action = ask.target.action(), resource = ask.target.name(), server = ask.server, decision = outcome, policies = ?d.policies, "policy decision");
        }
        d
    }
}
