//! The scenarios, and what they share: the measuring window (warm-up, then
//! a bounded time with the servers' CPU read at both ends) and error notes.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::cli::Args;
use crate::stats;

pub mod calls;
pub mod idle;
pub mod mixed;
pub mod ops;
pub mod sessions;

/// Longest any single operation may take before it counts as an error.
pub const OP_TIMEOUT: Duration = Duration::from_secs(30);

/// Warm-up until `measure_from`, measured load until `end`; the servers'
/// CPU seconds are read at both instants.
#[derive(Clone)]
pub struct Window {
    pub measure_from: Instant,
    pub end: Instant,
    cpu: Arc<Mutex<[Option<f64>; 6]>>,
    pids: Arc<[u32]>,
    aux: Arc<[u32]>,
}

impl Window {
    pub fn start(a: &Args) -> Self {
        let measure_from = Instant::now() + a.warmup();
        let end = measure_from + a.duration();
        let w = Self {
            measure_from,
            end,
            cpu: Arc::new(Mutex::new([None; 6])),
            pids: a.pid.clone().into(),
            aux: a.aux_pid.clone().into(),
        };
        // A thread of its own, so the readings are on time however busy
        // the (single-threaded) runtime is.
        let w2 = w.clone();
        std::thread::spawn(move || {
            std::thread::sleep(measure_from.saturating_duration_since(Instant::now()));
            w2.read(0);
            std::thread::sleep(end.saturating_duration_since(Instant::now()));
            w2.read(1);
        });
        w
    }

    /// Read every counter into slot `at` (0: start, 1: end) unless done.
    fn read(&self, at: usize) {
        let mut c = self.cpu.lock().unwrap();
        if c[2 + at].is_none() {
            c[at] = stats::total(&self.pids, stats::cpu_seconds);
            c[2 + at] = stats::cpu_seconds(std::process::id());
            c[4 + at] = stats::total(&self.aux, stats::cpu_seconds);
        }
    }

    /// The readings, the end ones taken now if the window is over and the
    /// reading thread has not got to them yet.
    fn ended(&self) -> std::sync::MutexGuard<'_, [Option<f64>; 6]> {
        if Instant::now() >= self.end {
            self.read(1);
        }
        self.cpu.lock().unwrap()
    }

    /// The servers' CPU seconds in the measured window (after it ended).
    pub fn cpu(&self) -> Option<f64> {
        let c = self.ended();
        Some(c[1]? - c[0]?)
    }

    /// The load generator's own CPU seconds in the window: near the
    /// window's length, the client (not the server) was the limit.
    pub fn client_cpu(&self) -> Option<f64> {
        let c = self.ended();
        Some(c[3]? - c[2]?)
    }

    /// The `--aux-pid` processes' CPU seconds in the window.
    pub fn aux_cpu(&self) -> Option<f64> {
        let c = self.ended();
        Some(c[5]? - c[4]?)
    }

    pub fn seconds(&self) -> f64 {
        (self.end - self.measure_from).as_secs_f64()
    }
}

/// Counts errors and prints the first few.
#[derive(Default)]
pub struct Errors(AtomicU64);

impl Errors {
    pub fn note(&self, what: &str, e: &anyhow::Error) {
        if self.0.fetch_add(1, Ordering::Relaxed) < 5 {
            eprintln!("{what} failed: {e:#}");
        }
    }

    pub fn count(&self) -> u64 {
        self.0.load(Ordering::Relaxed)
    }
}

/// `f` bounded by [`OP_TIMEOUT`].
pub async fn bounded<T>(
    f: impl std::future::Future<Output = anyhow::Result<T>>,
) -> anyhow::Result<T> {
    tokio::time::timeout(OP_TIMEOUT, f)
        .await
        .unwrap_or_else(|_| Err(anyhow::anyhow!("no answer within {OP_TIMEOUT:?}")))
}
