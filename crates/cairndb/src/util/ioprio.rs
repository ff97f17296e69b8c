//! The calling thread's I/O priority (Linux `ioprio_set`/`ioprio_get`).
//!
//! The background compaction thread puts its I/O in the idle class
//! (`Options::idle_compaction_io`), so flushes, which writers wait for, get
//! the device first. Other systems have no such call: the functions report
//! `Unsupported` there. No state, no locking.

/// `IOPRIO_WHO_PROCESS`: the target is one thread (0 = the caller).
#[cfg(target_os = "linux")]
const IOPRIO_WHO_PROCESS: libc::c_long = 1;
/// Bits below the class in a priority value.
#[cfg(target_os = "linux")]
const IOPRIO_CLASS_SHIFT: libc::c_long = 13;
/// The idle class: served when no other class has requests waiting (or
/// after the scheduler's bounded wait).
pub const IOPRIO_CLASS_IDLE: i64 = 3;

/// Puts the calling thread's I/O in the idle class.
pub fn set_idle_io_priority() -> std::io::Result<()> {
    #[cfg(target_os = "linux")]
    {
        // SAFETY: ioprio_set takes three integers and reads no memory of
        // ours; it changes only the calling thread's I/O priority.
        let rc = unsafe {
            libc::syscall(
                libc::SYS_ioprio_set,
                IOPRIO_WHO_PROCESS,
                0 as libc::c_long,
                (IOPRIO_CLASS_IDLE as libc::c_long) << IOPRIO_CLASS_SHIFT,
            )
        };
        if rc == 0 {
            Ok(())
        } else {
            Err(std::io::Error::last_os_error())
        }
    }
    #[cfg(not(target_os = "linux"))]
    {
        Err(std::io::ErrorKind::Unsupported.into())
    }
}

/// The I/O priority class of thread `tid` (0: the caller), as
/// `ioprio_get` reports it (0 when none was set: the class follows the
/// CPU priority).
pub fn io_priority_class(tid: i64) -> std::io::Result<i64> {
    #[cfg(target_os = "linux")]
    {
        // SAFETY: ioprio_get takes two integers and reads no memory of ours.
        let rc = unsafe {
            libc::syscall(
                libc::SYS_ioprio_get,
                IOPRIO_WHO_PROCESS,
                tid as libc::c_long,
            )
        };
        if rc < 0 {
            Err(std::io::Error::last_os_error())
        } else {
            Ok((rc as i64) >> IOPRIO_CLASS_SHIFT)
        }
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = tid;
        Err(std::io::ErrorKind::Unsupported.into())
    }
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;

    /// A thread that lowers itself is in the idle class; another thread is
    /// not touched.
    #[test]
    fn set_idle_io_priority_lowers_only_the_calling_thread() {
        let before = io_priority_class(0).unwrap();
        let (idle, other) = std::thread::spawn(move || {
            set_idle_io_priority().unwrap();
            (io_priority_class(0).unwrap(), before)
        })
        .join()
        .unwrap();
        assert_eq!(idle, IOPRIO_CLASS_IDLE);
        assert_eq!(io_priority_class(0).unwrap(), other);
    }
}
