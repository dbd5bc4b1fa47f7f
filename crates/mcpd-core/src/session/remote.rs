//! What reaches a session from outside its client: other replicas (over
//! the control bus, through the session table) and the change feed.

use actix::prelude::*;
use mcpd_protocol::jsonrpc;
use mcpd_protocol::methods as m;
use mcpd_protocol::types::UriParams;

use super::{empty, SessionActor, SessionRecord};
use crate::cluster::Control;
use crate::feed::Changed;
use crate::registry::Change;

use super::messages::{GetMoved, Reload, RemoteAnswer, RemoteCancel, RemoteGone, RemoteTail, Wake};

impl Handler<RemoteCancel> for SessionActor {
    type Result = ();

    fn handle(&mut self, msg: RemoteCancel, ctx: &mut Context<Self>) {
        if self.cancel_local(&msg.id) {
            self.drive(ctx);
        }
    }
}

impl Handler<RemoteAnswer> for SessionActor {
    type Result = ();

    fn handle(&mut self, msg: RemoteAnswer, _ctx: &mut Context<Self>) {
        if let Some(o) = self.outgoing.remove(&msg.id) {
            let _ = o.reply.send(msg.outcome);
        }
    }
}

impl Handler<Reload> for SessionActor {
    type Result = ();

    /// The record changed on another replica: the directory is authoritative.
    fn handle(&mut self, msg: Reload, ctx: &mut Context<Self>) {
        let (directory, id) = (self.env.directory.clone(), self.id.clone());
        let work = async move { directory.get(&id).await };
        ctx.wait(
            actix::fut::wrap_future::<_, Self>(work).map(move |res, act, _| {
                if let Some((replica, ack)) = msg.ack {
                    act.env
                        .cluster
                        .publish(Some(&replica), Control::Ack { ack });
                }
                let Ok(Some(bytes)) = res else { return };
                let Some(fresh) = SessionRecord::from_bytes(&bytes) else {
                    return;
                };
                for uri in act.record.subscriptions.difference(&fresh.subscriptions) {
                    act.env.feed.unsubscribe(uri, &act.id);
                }
                for uri in fresh.subscriptions.difference(&act.record.subscriptions) {
                    act.env.feed.subscribe(uri, &act.id);
                }
                act.record.log_level = fresh.log_level;
                act.record.subscriptions = fresh.subscriptions;
            }),
        );
    }
}

impl Handler<Wake> for SessionActor {
    type Result = ();

    fn handle(&mut self, msg: Wake, ctx: &mut Context<Self>) {
        self.streams.pull(msg.stream);
        self.drive(ctx);
    }
}

impl Handler<RemoteTail> for SessionActor {
    type Result = ();

    fn handle(&mut self, msg: RemoteTail, ctx: &mut Context<Self>) {
        self.streams.add_remote_reader(&msg.stream, msg.reader);
        self.drive(ctx);
    }
}

impl Handler<RemoteGone> for SessionActor {
    type Result = ();

    fn handle(&mut self, msg: RemoteGone, ctx: &mut Context<Self>) {
        self.streams.owner_gone(&msg.stream);
        self.drive(ctx);
    }
}

impl Handler<GetMoved> for SessionActor {
    type Result = ();

    fn handle(&mut self, msg: GetMoved, _ctx: &mut Context<Self>) {
        self.streams.get_moved(msg.to);
    }
}

impl Handler<Changed> for SessionActor {
    type Result = ();

    fn handle(&mut self, msg: Changed, ctx: &mut Context<Self>) {
        let message = match msg.0 {
            Change::ToolsListChanged => {
                jsonrpc::notification(m::NOTIFICATION_TOOLS_LIST_CHANGED, empty())
            }
            Change::PromptsListChanged => {
                jsonrpc::notification(m::NOTIFICATION_PROMPTS_LIST_CHANGED, empty())
            }
            Change::ResourcesListChanged => {
                jsonrpc::notification(m::NOTIFICATION_RESOURCES_LIST_CHANGED, empty())
            }
            Change::ResourceUpdated(uri) => {
                if !self.record.subscriptions.contains(&uri) {
                    return;
                }
                let params = serde_json::to_value(UriParams { uri }).unwrap_or_default();
                jsonrpc::notification(m::NOTIFICATION_RESOURCE_UPDATED, params)
            }
        };
        let target = self.streams.unsolicited();
        self.streams.send_interim(&target, &message);
        self.drive(ctx);
    }
}
