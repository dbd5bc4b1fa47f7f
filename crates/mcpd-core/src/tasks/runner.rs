//! The runner side: a task running here learns of answers and
//! cancellations from its record (on a nudge over the cluster bus, and every
//! two seconds, since pub/sub does not queue); the same tick reaps the tasks
//! of replicas that died.

use std::collections::HashMap;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use mcpd_store::tasks::TaskState;
use mcpd_store::{ReplicaId, TaskId};

use super::Tasks;
use crate::cluster::Control;

// === impl Tasks ===

impl Tasks {
    /// A task of this replica may have news in its record: a cancellation
    /// or answers.
    pub async fn sync(&self, id: &TaskId) {
        let Some(running) = self.locals().get(id).cloned() else {
            return;
        };
        if !running.stored.load(Ordering::Acquire) {
            return; // its record is being written
        }
        let rec = match self.store.get(id).await {
            Ok(r) => r,
            Err(e) => {
                tracing::debug!(task = %id, error = %e, "task record not read; next sync retries");
                return;
            }
        };
        match rec {
            // Ended elsewhere (a reaper that thought this replica dead) or
            // expired: stop the work, which has no one to report to.
            Some(ref r) if r.state.is_terminal() => self.forget(id),
            None => self.forget(id),
            Some(r) if r.cancel_requested => {
                running.cancel.notify_one();
                self.end(
                    id,
                    TaskState::Cancelled,
                    Some("Cancelled by tasks/cancel".into()),
                    None,
                )
                .await;
            }
            Some(_) => match self.store.take_answers(id).await {
                Ok(answers) => running.peer.deliver(answers),
                Err(e) => {
                    tracing::debug!(task = %id, error = %e, "answers not taken; next sync retries")
                }
            },
        }
    }

    /// Stops and forgets a task of this replica whose record ended without
    /// it (once, however many callers race here).
    fn forget(&self, id: &TaskId) {
        if let Some(r) = self.locals().remove(id) {
            r.cancel.notify_one();
            self.server.metrics.tasks_working.dec();
        }
    }

    /// A control message for the task service (`false`: not one).
    pub fn on_control(self: &Arc<Self>, msg: &Control) -> bool {
        match msg {
            Control::Task { id } => {
                let (this, id) = (self.clone(), id.clone());
                actix::spawn(async move { this.sync(&id).await });
                true
            }
            Control::TaskChanged { id, from } => {
                if from != self.cluster.replica() {
                    self.watch.poke(id, self.store.clone());
                }
                true
            }
            _ => false,
        }
    }

    /// Every two seconds: reads the records of this replica's tasks (a
    /// lost nudge costs at most that), and fails the tasks of replicas
    /// that died. Call once, inside an actix arbiter.
    pub fn start(self: &Arc<Self>) {
        let this = self.clone();
        // Alone, every task runs here and nothing can die elsewhere.
        let shared = self.cluster.shared();
        actix::spawn(async move {
            let mut tick = tokio::time::interval(Duration::from_secs(2));
            tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                tick.tick().await;
                this.store.purge();
                if !shared {
                    continue;
                }
                // A change announced while the bus was away is not lost
                // to the watchers: they read again every tick.
                for id in this.watch.watched() {
                    this.watch.poke(&id, this.store.clone());
                }
                let mine: Vec<TaskId> = this.locals().keys().cloned().collect();
                for id in mine {
                    this.sync(&id).await;
                }
                this.reap().await;
            }
        });
    }

    /// Fails the tasks whose replica is dead.
    async fn reap(&self) {
        let Ok(running) = self.store.running().await else {
            return;
        };
        let mut alive: HashMap<ReplicaId, bool> = HashMap::new();
        for (id, runner) in running {
            let mine = runner == *self.cluster.replica();
            if mine && self.locals().contains_key(&id) {
                continue;
            }
            // One of this replica's whose end was never written (the store
            // was away too long), or that of another replica.
            let live = !mine
                && match alive.get(&runner) {
                    Some(l) => *l,
                    None => {
                        let l = self.cluster.is_alive(&runner).await != Some(false);
                        alive.insert(runner.clone(), l);
                        l
                    }
                };
            if live {
                continue;
            }
            if let Ok(Some(rec)) = self.store.get(&id).await {
                if !rec.state.is_terminal() {
                    self.fail_lost(&rec).await;
                }
            }
        }
    }
}
