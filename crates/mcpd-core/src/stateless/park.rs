//! The parking table: the stateless-era calls of this replica that wait,
//! alive, between rounds for the retry that brings their answers, under
//! bounds (in all and per principal, in count and bytes) and a deadline.
//!
//! A parked call is named in the `requestState` it answered with (sealed
//! with the answers, so the client cannot alter it): the park id and the
//! replica that holds it. A retry on this replica resumes it here; one on
//! another replica is sent here over the cluster bus. When the call is
//! gone (its deadline passed, its replica died) or the table was full,
//! the retry runs the handler again from the start with every answer at
//! hand, as the revision describes.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use mcpd_protocol::types::JsonObject;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::call::{Call, RoundOut};
use super::relay::{BusSink, Relays, Sink};
use crate::cluster::{Cluster, Control, RelayItem};

/// The key in the sealed answers that names the parked call.
pub(super) const PARK_KEY: &str = "mcpd/parked";

/// How long and how many calls may wait parked.
#[derive(Debug, Clone)]
pub struct ParkLimits {
    /// How long a parked call waits for its retry; then it is stopped
    /// and a late retry runs the handler again from the start.
    pub wait: Duration,
    /// Parked calls on this replica, in all (0: never park).
    pub max_calls: usize,
    /// Parked calls of one principal (anonymous calls: no such bound).
    pub max_per_principal: usize,
    /// Bytes held by parked calls, in all (see [`Parked::bytes`]).
    pub max_bytes: usize,
}

impl Default for ParkLimits {
    fn default() -> Self {
        Self {
            wait: Duration::from_secs(120),
            max_calls: 10_000,
            max_per_principal: 100,
            max_bytes: 64 << 20,
        }
    }
}

/// What a `requestState` says of the call it belongs to.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(super) struct ParkRef {
    /// The parked call.
    pub(super) id: String,
    /// The replica that holds it.
    pub(super) replica: String,
    /// The round that answered `input_required` (the retry is the next).
    pub(super) round: u64,
}

impl ParkRef {
    /// Takes the reference out of opened answers (a malformed one is
    /// dropped: the retry then runs from the start).
    pub(super) fn take(answers: &mut JsonObject) -> Option<Self> {
        serde_json::from_value(answers.remove(PARK_KEY)?).ok()
    }

    pub(super) fn to_value(&self) -> Value {
        serde_json::to_value(self).unwrap_or(Value::Null)
    }
}

struct Entry {
    call: Weak<Call>,
    principal: Option<String>,
    bytes: usize,
}

#[derive(Default)]
struct Table {
    calls: HashMap<String, Entry>,
    per_principal: HashMap<String, usize>,
    bytes: usize,
}

/// Why a call could not be parked (it is then set aside and re-run).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Full {
    /// `max_calls` or `max_bytes` reached.
    Replica,
    /// `max_per_principal` reached.
    Principal,
}

/// The parked calls of one replica (one table for every endpoint: park ids
/// are random).
pub struct Parking {
    /// `mcpd_parked_calls_total`, each outcome's series resolved once.
    outcomes: Vec<(&'static str, mcpd_telemetry::IntCounter)>,
    cluster: Arc<dyn Cluster>,
    /// The channels of rounds resumed across replicas.
    pub(super) relays: Arc<Relays>,
    limits: ParkLimits,
    table: Mutex<Table>,
    metrics: Arc<mcpd_telemetry::Metrics>,
}

impl Parking {
    /// The table of the replica `cluster` is the view of, reporting to
    /// `metrics`.
    pub fn new(
        cluster: Arc<dyn Cluster>,
        limits: ParkLimits,
        metrics: Arc<mcpd_telemetry::Metrics>,
    ) -> Arc<Self> {
        let outcomes = mcpd_telemetry::PARK_OUTCOMES
            .iter()
            .map(|o| (*o, metrics.parked_calls_total.with_label_values(&[o])))
            .collect();
        Arc::new(Self {
            outcomes,
            cluster,
            relays: Arc::default(),
            limits,
            table: Mutex::default(),
            metrics,
        })
    }

    /// This replica's id, as a `requestState` names it.
    pub(super) fn replica(&self) -> &str {
        self.cluster.replica()
    }

    /// The replica's view of the others.
    pub(super) fn cluster(&self) -> &Arc<dyn Cluster> {
        &self.cluster
    }

    /// Takes the control messages of rounds resumed across replicas;
    /// `false` for any other message.
    pub fn on_control(&self, msg: &Control) -> bool {
        match msg {
            Control::Resume {
                park,
                round,
                answers,
                id,
                progress,
                log,
                reply,
                ch,
            } => {
                let sink = BusSink::new(
                    self.cluster.clone(),
                    reply.clone(),
                    ch.clone(),
                    self.relays.clone(),
                );
                let out = RoundOut::new(Sink::Bus(sink), id.clone(), progress.clone(), *log);
                let resumed = match self.get(park) {
                    Some(call) => call.resume(*round, out, answers.clone()).map(|()| call),
                    None => Err(out),
                };
                match resumed {
                    // Before any message of the round: the handler runs
                    // once this message is handled.
                    Ok(call) => {
                        if let Some(Sink::Bus(bus)) = call.out().as_deref().map(|o| &o.writer) {
                            bus.relay(RelayItem::Accepted);
                        }
                    }
                    Err(out) => {
                        if let Sink::Bus(bus) = &out.writer {
                            bus.relay(RelayItem::Missing);
                        }
                    }
                }
            }
            Control::Relay { ch, seq, item } => self.relays.deliver(ch, *seq, item.clone()),
            Control::Unrelay { ch } => self.relays.hang_up(ch),
            _ => return false,
        }
        true
    }

    /// Whether parking is off (`max_parked = 0`).
    pub(super) fn off(&self) -> bool {
        self.limits.max_calls == 0
    }

    /// How long a parked call waits.
    pub(super) fn wait(&self) -> Duration {
        self.limits.wait
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Table> {
        self.table.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Counts one way a parked call (or a retry) went.
    pub(super) fn count(&self, outcome: &str) {
        if let Some((_, c)) = self.outcomes.iter().find(|(o, _)| *o == outcome) {
            c.inc();
        }
    }

    /// Parks `call` of `principal`, holding `bytes`, unless a bound is
    /// reached; the returned [`Parked`] keeps it in the table until it is
    /// dropped (when the call ends, however it ends). Anonymous calls
    /// (no principal to tell clients apart) are bound only in all.
    pub(super) fn admit(
        self: &Arc<Self>,
        call: &Arc<Call>,
        principal: Option<&str>,
        bytes: usize,
    ) -> Result<Parked, Full> {
        let limits = &self.limits;
        let id = uuid::Uuid::new_v4().simple().to_string();
        {
            let mut t = self.lock();
            if t.calls.len() >= limits.max_calls || t.bytes + bytes > limits.max_bytes {
                return Err(Full::Replica);
            }
            if let Some(who) = principal {
                let mine = t.per_principal.get(who).copied().unwrap_or(0);
                if mine >= limits.max_per_principal {
                    return Err(Full::Principal);
                }
                *t.per_principal.entry(who.to_owned()).or_default() += 1;
            }
            t.bytes += bytes;
            let entry = Entry {
                call: Arc::downgrade(call),
                principal: principal.map(str::to_owned),
                bytes,
            };
            t.calls.insert(id.clone(), entry);
            self.gauges(&t);
        }
        Ok(Parked {
            parking: self.clone(),
            id,
        })
    }

    /// The parked call `id`, if this replica holds it.
    pub(super) fn get(&self, id: &str) -> Option<Arc<Call>> {
        self.lock().calls.get(id)?.call.upgrade()
    }

    /// Parked calls on this replica now.
    pub fn len(&self) -> usize {
        self.lock().calls.len()
    }

    /// Whether no call is parked here.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Bytes the parked calls hold now.
    pub fn bytes(&self) -> usize {
        self.lock().bytes
    }

    fn gauges(&self, t: &Table) {
        self.metrics.parked_calls.set(t.calls.len() as i64);
        self.metrics.parked_bytes.set(t.bytes as i64);
    }

    fn remove(&self, id: &str) {
        let mut t = self.lock();
        let Some(e) = t.calls.remove(id) else {
            return;
        };
        t.bytes -= e.bytes;
        if let Some(who) = &e.principal {
            if let Some(n) = t.per_principal.get_mut(who) {
                *n -= 1;
                if *n == 0 {
                    t.per_principal.remove(who);
                }
            }
        }
        self.gauges(&t);
    }
}

/// A call's place in the table while it waits for one retry, held by its
/// driver: dropped (resumed, or ended), the call leaves the table. Each
/// round parks under a new id.
pub(super) struct Parked {
    parking: Arc<Parking>,
    id: String,
}

impl Parked {
    /// The reference a `requestState` carries to this call at `round`.
    pub(super) fn reference(&self, round: u64) -> ParkRef {
        ParkRef {
            id: self.id.clone(),
            replica: self.parking.replica().to_owned(),
            round,
        }
    }

    /// The measure of a parked call: the handler's future (its state
    /// machine: the locals it holds across the question), the answers so
    /// far and the questions asked, as JSON. Memory the handler reaches
    /// through pointers of its own is not seen.
    pub(super) fn bytes(call: &Call, future: usize) -> usize {
        let questions = {
            let s = call.mrtr.state.lock().unwrap_or_else(|p| p.into_inner());
            serde_json::to_vec(&s.inputs).map_or(0, |v| v.len())
        };
        future + call.answers_bytes() + questions
    }
}

impl Drop for Parked {
    fn drop(&mut self) {
        self.parking.remove(&self.id);
    }
}

#[cfg(test)]
mod tests {
    use mcpd_protocol::RequestId;
    use serde_json::json;

    use super::*;
    use crate::stateless::call::RoundOut;

    fn parking(max_calls: usize, max_per_principal: usize, max_bytes: usize) -> Arc<Parking> {
        let limits = ParkLimits {
            wait: Duration::from_secs(1),
            max_calls,
            max_per_principal,
            max_bytes,
        };
        let cluster = Arc::new(crate::cluster::Local::new("r1".into()));
        Parking::new(cluster, limits, Arc::default())
    }

    fn call() -> Arc<Call> {
        let (tx, _rx) = crate::stream::bounded(4, 1 << 20, mcpd_store::Budgets::new([]));
        let out = RoundOut::new(Sink::Local(tx), RequestId::Int(1), None, None);
        Call::new(out, JsonObject::new())
    }

    /// A principal gets `max_per_principal` parked calls, another its own;
    /// anonymous calls are bound only in all; a place given back is free
    /// again, and the gauges follow.
    #[test]
    fn each_principal_has_its_bound_and_all_share_one() {
        let p = parking(4, 2, 1 << 20);
        let c = call();
        let a1 = p.admit(&c, Some("alice"), 10).unwrap();
        let _a2 = p.admit(&c, Some("alice"), 10).unwrap();
        assert_eq!(p.admit(&c, Some("alice"), 10).err(), Some(Full::Principal));
        let _b = p.admit(&c, Some("bob"), 10).unwrap();
        let _anon = p.admit(&c, None, 10).unwrap();
        assert_eq!(p.admit(&c, None, 10).err(), Some(Full::Replica), "4 in all");
        assert_eq!((p.len(), p.bytes()), (4, 40));
        assert_eq!(p.metrics.parked_calls.get(), 4);
        drop(a1);
        assert_eq!((p.len(), p.bytes()), (3, 30));
        assert!(p.admit(&c, Some("alice"), 10).is_ok());
    }

    /// The bytes bound refuses a call that would pass it.
    #[test]
    fn the_bytes_bound_refuses_a_call_that_would_pass_it() {
        let p = parking(100, 100, 100);
        let c = call();
        let _a = p.admit(&c, None, 60).unwrap();
        assert_eq!(p.admit(&c, None, 41).err(), Some(Full::Replica));
        let _b = p.admit(&c, None, 40).unwrap();
        assert_eq!(p.metrics.parked_bytes.get(), 100);
    }

    /// A parked call is found by the id its reference names, and no longer
    /// once its place is given back; the reference travels in the sealed
    /// answers and comes back out of them.
    #[test]
    fn a_reference_names_the_call_until_its_place_is_given_back() {
        let p = parking(10, 10, 1 << 20);
        let c = call();
        let place = p.admit(&c, None, 1).unwrap();
        let at = place.reference(3);
        assert_eq!((at.replica.as_str(), at.round), ("r1", 3));
        assert!(p.get(&at.id).is_some_and(|got| Arc::ptr_eq(&got, &c)));
        let mut answers = JsonObject::new();
        answers.insert(PARK_KEY.into(), at.to_value());
        answers.insert("q".into(), json!(1));
        assert_eq!(ParkRef::take(&mut answers), Some(at.clone()));
        assert_eq!(answers.len(), 1);
        drop(place);
        assert!(p.get(&at.id).is_none());
    }
}
