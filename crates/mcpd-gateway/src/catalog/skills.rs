//! An upstream's skills (the Skills extension) in the aggregated catalogue:
//! listed when the upstream declares the extension, served by `/mcp`'s
//! `skills/list` and `skills/get` after mcpd's own, with a directory of
//! theirs read from the upstream. (Their files are read as any of the
//! upstream's resources.)

use std::sync::Arc;

use async_trait::async_trait;
use mcpd_core::skills::SkillSource;
use mcpd_core::McpServer;
use mcpd_protocol::types::{
    InitializeResult, ListSkillsResult, ReadDirectoryParams, ReadDirectoryResult, Skill,
    SKILLS_EXTENSION,
};
use mcpd_protocol::{methods, ErrorObject};

use super::pages::{all_pages, params_of, read, ListPage};
use crate::forward::Upstream;

impl ListPage for ListSkillsResult {
    type Item = Skill;
    fn into_parts(self) -> (Vec<Skill>, Option<String>) {
        (self.skills, self.next_cursor)
    }
}

/// Reads `up`'s skills into `server`'s (none when it does not declare the
/// extension).
pub(super) async fn refresh(
    up: &Arc<Upstream>,
    init: &InitializeResult,
    server: &McpServer,
) -> Result<(), ErrorObject> {
    let declared = init
        .capabilities
        .extensions
        .as_ref()
        .is_some_and(|e| e.contains_key(SKILLS_EXTENSION));
    let entries = match declared {
        true => all_pages::<ListSkillsResult>(up, methods::SKILLS_LIST).await?,
        false => Vec::new(),
    };
    let source = Arc::new(UpstreamSkills(up.clone()));
    server
        .registry
        .skills()
        .set_upstream(up.id(), entries, source);
    Ok(())
}

struct UpstreamSkills(Arc<Upstream>);

#[async_trait]
impl SkillSource for UpstreamSkills {
    async fn read_directory(
        &self,
        uri: &str,
        cursor: Option<&str>,
    ) -> Result<ReadDirectoryResult, ErrorObject> {
        let params = params_of(&ReadDirectoryParams {
            uri: uri.to_owned(),
            cursor: cursor.map(str::to_owned),
        });
        let method = methods::RESOURCES_DIRECTORY_READ;
        read(&self.0, method, self.0.call(method, params, None).await?)
    }
}
