//! Byte budgets: one counter per thing bounded (a connection, a session, a
//! client, the process), charged together by everything that holds bytes
//! on their behalf and refunded when the bytes go.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

/// Bytes held against one limit, shared by everything it bounds.
#[derive(Debug)]
pub struct Budget {
    used: AtomicUsize,
    limit: usize,
}

impl Budget {
    pub fn new(limit: usize) -> Arc<Self> {
        Arc::new(Self {
            used: AtomicUsize::new(0),
            limit,
        })
    }

    /// Bytes held now.
    pub fn used(&self) -> usize {
        self.used.load(Ordering::Relaxed)
    }

    /// Holds `n` more bytes if that stays within the limit.
    fn try_take(&self, n: usize) -> bool {
        let before = self.used.fetch_add(n, Ordering::Relaxed);
        if before.saturating_add(n) > self.limit {
            self.used.fetch_sub(n, Ordering::Relaxed);
            return false;
        }
        true
    }

    fn take(&self, n: usize) {
        self.used.fetch_add(n, Ordering::Relaxed);
    }

    fn give(&self, n: usize) {
        self.used.fetch_sub(n, Ordering::Relaxed);
    }
}

/// Several budgets charged together, innermost first (a session's, then
/// its client's, then the process's).
#[derive(Debug, Clone, Default)]
pub struct Budgets(Arc<[Arc<Budget>]>);

impl Budgets {
    pub fn new(budgets: impl IntoIterator<Item = Arc<Budget>>) -> Self {
        Self(budgets.into_iter().collect())
    }

    /// Holds `n` bytes against every budget, or against none when one of
    /// them would go over its limit.
    pub fn try_take(&self, n: usize) -> bool {
        for (i, b) in self.0.iter().enumerate() {
            if !b.try_take(n) {
                self.0[..i].iter().for_each(|b| b.give(n));
                return false;
            }
        }
        true
    }

    /// Holds `n` bytes whatever the limits say (one message must always
    /// be able to pass).
    pub fn take(&self, n: usize) {
        self.0.iter().for_each(|b| b.take(n));
    }

    /// Returns `n` bytes taken before.
    pub fn give(&self, n: usize) {
        self.0.iter().for_each(|b| b.give(n));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn all_or_nothing() {
        let (a, b) = (Budget::new(10), Budget::new(15));
        let both = Budgets::new([a.clone(), b.clone()]);
        assert!(both.try_take(8));
        assert!(!both.try_take(3), "a would go over");
        assert_eq!((a.used(), b.used()), (8, 8), "nothing held by a refusal");
        let only_b = Budgets::new([b.clone()]);
        assert!(only_b.try_take(7));
        assert!(!both.try_take(1), "b is full");
        both.give(8);
        assert_eq!((a.used(), b.used()), (0, 7));
        both.take(20);
        assert_eq!((a.used(), b.used()), (20, 27));
    }
}
