//! The clock `--histogram` times each operation with.
//!
//! Timing every operation costs a clock read per operation, and on this
//! kind of virtual machine `Instant::now()` (`clock_gettime` through the
//! vDSO) takes about 30 ns, a third of a `readseq` step: the ruler would
//! weigh as much as what it measures. Where the processor's time-stamp
//! counter runs at a constant rate through every power state (the
//! `constant_tsc` and `nonstop_tsc` flags of `/proc/cpuinfo`, x86-64 only),
//! operations are timed by reading it instead (about 11 ns), in ticks that
//! are converted to nanoseconds when the histogram is reported, at a rate
//! measured against `Instant` over the life of the process. Elsewhere the
//! ticks are nanoseconds of `Instant` since the process's first read.
//!
//! Whole-benchmark times (the micros/op and ops/sec of the report line)
//! always come from `Instant`, never from this clock.
//!
//! Invariant: one process uses one kind of tick (decided once), so
//! histograms of different threads can be merged as they are.

use std::sync::OnceLock;
use std::time::Instant;

/// The process's clock: its kind and where it started.
struct Anchor {
    tsc: bool,
    instant: Instant,
    ticks: u64,
}

static ANCHOR: OnceLock<Anchor> = OnceLock::new();

fn anchor() -> &'static Anchor {
    ANCHOR.get_or_init(|| {
        let tsc = tsc_usable();
        Anchor {
            tsc,
            instant: Instant::now(),
            ticks: if tsc { read_tsc() } else { 0 },
        }
    })
}

/// True when the time-stamp counter ticks at a constant rate (see the
/// module doc).
fn tsc_usable() -> bool {
    if !cfg!(target_arch = "x86_64") {
        return false;
    }
    let Ok(info) = std::fs::read_to_string("/proc/cpuinfo") else {
        return false;
    };
    let flags = info
        .lines()
        .find(|l| l.starts_with("flags"))
        .unwrap_or_default();
    let has = |f: &str| flags.split_whitespace().any(|w| w == f);
    has("constant_tsc") && has("nonstop_tsc")
}

#[cfg(target_arch = "x86_64")]
#[inline]
fn read_tsc() -> u64 {
    // SAFETY: `rdtsc` reads a register and has no memory effects; every
    // x86-64 processor has it (it is part of the base instruction set).
    // Exercised by `tsc_ticks_advance_with_time`.
    unsafe { core::arch::x86_64::_rdtsc() }
}

#[cfg(not(target_arch = "x86_64"))]
#[inline]
fn read_tsc() -> u64 {
    0
}

/// A per-process clock for timing operations (see the module doc).
#[derive(Clone, Copy)]
pub struct OpClock {
    anchor: &'static Anchor,
}

impl OpClock {
    /// The process's clock (decides its kind on first use).
    pub fn get() -> OpClock {
        OpClock { anchor: anchor() }
    }

    /// The current tick.
    #[inline]
    pub fn now(self) -> u64 {
        if self.anchor.tsc {
            read_tsc()
        } else {
            self.anchor.instant.elapsed().as_nanos() as u64
        }
    }

    /// Nanoseconds per tick, measured from the process's first read until
    /// now (at least 20 ms, waited for when the process is younger).
    pub fn nanos_per_tick(self) -> f64 {
        if !self.anchor.tsc {
            return 1.0;
        }
        let min = std::time::Duration::from_millis(20);
        let elapsed = self.anchor.instant.elapsed();
        if elapsed < min {
            std::thread::sleep(min - elapsed);
        }
        let ns = self.anchor.instant.elapsed().as_nanos() as f64;
        let ticks = read_tsc().wrapping_sub(self.anchor.ticks);
        if ticks == 0 {
            1.0
        } else {
            ns / ticks as f64
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Ticks converted with `nanos_per_tick` must agree with `Instant` over
    /// a sleep (within a generous margin for a loaded machine).
    #[test]
    fn tsc_ticks_advance_with_time() {
        let c = OpClock::get();
        let a = c.now();
        let t = Instant::now();
        std::thread::sleep(std::time::Duration::from_millis(30));
        let b = c.now();
        let real = t.elapsed().as_nanos() as f64;
        let measured = b.wrapping_sub(a) as f64 * c.nanos_per_tick();
        assert!(b > a, "the clock did not advance: {a} then {b}");
        assert!(
            measured > real * 0.8 && measured < real * 1.25,
            "ticks say {measured} ns, Instant says {real} ns"
        );
        // The counter itself advances, whichever kind the process uses.
        assert!(read_tsc() != 0 || !cfg!(target_arch = "x86_64"));
    }
}
