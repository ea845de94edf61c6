//! Locks of the client's shared maps (challenges, tokens, HTTP clients, the fetch cache).

use std::sync::{Mutex, MutexGuard};

/// Locks `m`, whether or not another holder panicked (the maps stay consistent).
pub(super) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}
