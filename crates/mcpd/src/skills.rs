//! Skills from `[skills] dir`: loaded at start, then checked every
//! `reload_secs` and loaded again when a file changed (a ConfigMap volume
//! updated in place), announced as `notifications/resources/list_changed`
//! (the extension has no notification of its own).

use std::path::PathBuf;
use std::time::Duration;

use futures_util::future::BoxFuture;
use mcpd_core::skills::{fingerprint, Skills};
use mcpd_core::{ChangeNotifier, Registry};

use crate::config::SkillsSection;

/// Loads the configured directory into `registry`'s skills; returns the
/// watcher to run in the server's runtime (none when the directory is
/// loaded once or not configured).
pub(crate) fn install(cfg: &SkillsSection, registry: &Registry) -> Option<BoxFuture<'static, ()>> {
    if cfg.dir.is_empty() {
        return None;
    }
    let (skills, dir) = (registry.skills().clone(), PathBuf::from(&cfg.dir));
    skills.offer();
    load(&skills, &dir);
    let every = Duration::from_secs(cfg.reload_secs);
    (cfg.reload_secs > 0).then(|| {
        let notifier = registry.notifier();
        Box::pin(watch(skills, dir, every, notifier)) as BoxFuture<'static, ()>
    })
}

/// Loads `dir`; `true` when the skills changed.
fn load(skills: &Skills, dir: &std::path::Path) -> bool {
    match skills.load_dir(dir) {
        Ok((refused, changed)) => {
            for why in refused {
                tracing::warn!(dir = %dir.display(), "skill not served: {why}");
            }
            tracing::info!(dir = %dir.display(), skills = skills.len(), "skills loaded");
            changed
        }
        Err(e) => {
            tracing::warn!(dir = %dir.display(), error = %e, "skills directory not read; the skills served are unchanged");
            false
        }
    }
}

async fn watch(skills: Skills, dir: PathBuf, every: Duration, notifier: ChangeNotifier) {
    let mut seen = fingerprint(&dir).ok();
    loop {
        tokio::time::sleep(every).await;
        let now = fingerprint(&dir).ok();
        if now.is_none() || now == seen {
            continue;
        }
        seen = now;
        if load(&skills, &dir) {
            notifier.resources_list_changed();
        }
    }
}
