//! A per-thread hook around the engine's waits that can last: a row lock
//! held by another transaction, a write stall, a writer's turn in the
//! commit pipeline, a sync awaited with `Db::wait_durable`.
//!
//! An async server may call the engine from a task's own worker thread for
//! statements that usually do not wait (an update by primary key), where
//! moving every such call to another thread first would cost more than the
//! call. Such a server installs a hook on its worker threads (tokio's
//! `block_in_place`): the engine runs each of those waits through it, so
//! only a call that actually waits gives up the worker. Without a hook a
//! wait just runs. While the hook runs a wait, waits nested in it run
//! plainly (the hook is disarmed on that thread meanwhile).
//!
//! Locking: none; the hook is a plain function pointer in a thread-local.

use std::cell::Cell;

/// Runs the wait it is given (exactly once) in whatever way the thread
/// needs, e.g. `|w| tokio::task::block_in_place(w)`.
pub type BlockingHook = fn(&mut dyn FnMut());

thread_local! {
    static HOOK: Cell<Option<BlockingHook>> = const { Cell::new(None) };
}

/// Installs (or with `None` removes) the calling thread's hook.
pub fn set_thread_blocking_hook(hook: Option<BlockingHook>) {
    HOOK.with(|h| h.set(hook));
}

/// Runs `f`, a wait that may last, through the calling thread's hook if it
/// has one (see the module docs). Also for callers above the engine that
/// wait on their own locks.
pub fn blocking<T>(f: impl FnOnce() -> T) -> T {
    let Some(hook) = HOOK.with(|h| h.get()) else {
        return f();
    };
    HOOK.with(|h| h.set(None));
    let mut f = Some(f);
    let mut out = None;
    hook(&mut || {
        if let Some(f) = f.take() {
            out = Some(f());
        }
    });
    HOOK.with(|h| h.set(Some(hook)));
    match (out, f) {
        (Some(v), _) => v,
        // A hook that did not run the wait: run it here.
        (None, Some(f)) => f(),
        (None, None) => unreachable!("the wait ran but left no result"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    static CALLS: AtomicUsize = AtomicUsize::new(0);

    fn counting(w: &mut dyn FnMut()) {
        CALLS.fetch_add(1, Ordering::SeqCst);
        w();
        // Nested waits run plainly, not through the hook again.
        assert_eq!(blocking(|| 7), 7);
    }

    fn lazy(_: &mut dyn FnMut()) {}

    #[test]
    fn waits_run_through_the_hook_once_and_nested_ones_plainly() {
        std::thread::spawn(|| {
            assert_eq!(blocking(|| 1), 1);
            set_thread_blocking_hook(Some(counting));
            assert_eq!(blocking(|| 2), 2);
            assert_eq!(blocking(|| 3), 3);
            set_thread_blocking_hook(None);
            assert_eq!(blocking(|| 4), 4);
        })
        .join()
        .unwrap();
        assert_eq!(CALLS.load(Ordering::SeqCst), 2);
    }

    #[test]
    fn a_hook_that_skips_the_wait_still_gets_it_run() {
        std::thread::spawn(|| {
            set_thread_blocking_hook(Some(lazy));
            assert_eq!(blocking(|| 5), 5);
        })
        .join()
        .unwrap();
    }
}
