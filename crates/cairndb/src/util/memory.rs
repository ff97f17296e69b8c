//! How much memory this process could still use: the smaller of the
//! kernel's `MemAvailable` and, when the process runs in a memory cgroup
//! with a limit, that limit less the group's usage (page cache included).
//! Read from `/proc` and `/sys/fs/cgroup` (v2, or v1's memory
//! controller). No state, no locks; `None` where none of it is readable.

use std::path::Path;

/// Bytes this process could still use (see the module docs), or `None`.
pub fn available_bytes() -> Option<u64> {
    let meminfo = std::fs::read_to_string("/proc/meminfo").ok();
    let host = meminfo.as_deref().and_then(mem_available);
    let group = std::fs::read_to_string("/proc/self/cgroup")
        .ok()
        .and_then(|c| cgroup_headroom(&c, Path::new("/sys/fs/cgroup")));
    match (host, group) {
        (Some(h), Some(g)) => Some(h.min(g)),
        (h, g) => h.or(g),
    }
}

/// `MemAvailable` of a `/proc/meminfo` text, in bytes.
fn mem_available(meminfo: &str) -> Option<u64> {
    let line = meminfo.lines().find(|l| l.starts_with("MemAvailable:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    kib.checked_mul(1024)
}

/// Limit less usage of the memory cgroup that `/proc/self/cgroup` text
/// `cgroups` names, under the cgroup file system mounted at `root`; `None`
/// without a limit ("max", or v1's near-`u64::MAX` "unlimited").
fn cgroup_headroom(cgroups: &str, root: &Path) -> Option<u64> {
    let read = |p: &Path| -> Option<u64> { std::fs::read_to_string(p).ok()?.trim().parse().ok() };
    for line in cgroups.lines() {
        // "hierarchy-id:controllers:path"
        let mut f = line.splitn(3, ':');
        let (_, controllers, path) = (f.next()?, f.next()?, f.next()?);
        let rel = path.trim_start_matches('/');
        let (limit, usage) = if controllers.split(',').any(|c| c == "memory") {
            let dir = root.join("memory").join(rel);
            (
                read(&dir.join("memory.limit_in_bytes")),
                read(&dir.join("memory.usage_in_bytes")),
            )
        } else if controllers.is_empty() {
            let dir = root.join(rel);
            (
                read(&dir.join("memory.max")),
                read(&dir.join("memory.current")),
            )
        } else {
            continue;
        };
        // v1 reports "no limit" as a page-rounded i64::MAX.
        if let (Some(l), Some(u)) = (limit, usage) {
            if l < 1 << 60 {
                return Some(l.saturating_sub(u));
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mem_available_is_read_in_bytes() {
        let t = "MemTotal:       24000000 kB\nMemFree:  100 kB\nMemAvailable:   1000 kB\n";
        assert_eq!(mem_available(t), Some(1_024_000));
        assert_eq!(mem_available("MemTotal: 5 kB\n"), None);
        assert_eq!(mem_available("MemAvailable: lots kB\n"), None);
    }

    fn write(p: &Path, s: &str) {
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, s).unwrap();
    }

    #[test]
    fn cgroup_v1_and_v2_limits_less_usage() {
        let d = tempfile::tempdir().unwrap();
        let r = d.path();
        write(&r.join("memory/bench/memory.limit_in_bytes"), "1000000\n");
        write(&r.join("memory/bench/memory.usage_in_bytes"), "400000\n");
        let v1 = "12:cpu,cpuacct:/\n4:memory:/bench\n0::/\n";
        assert_eq!(cgroup_headroom(v1, r), Some(600_000));
        write(&r.join("svc/memory.max"), "5000\n");
        write(&r.join("svc/memory.current"), "7000\n");
        assert_eq!(cgroup_headroom("0::/svc\n", r), Some(0), "over the limit");
        write(&r.join("free/memory.max"), "max\n");
        write(&r.join("free/memory.current"), "7000\n");
        assert_eq!(cgroup_headroom("0::/free\n", r), None, "no limit");
        write(
            &r.join("memory/big/memory.limit_in_bytes"),
            "9223372036854771712\n",
        );
        write(&r.join("memory/big/memory.usage_in_bytes"), "1\n");
        assert_eq!(cgroup_headroom("4:memory:/big\n", r), None, "v1 unlimited");
        assert_eq!(cgroup_headroom("4:memory:/absent\n", r), None);
        assert_eq!(cgroup_headroom("garbage", r), None);
    }
}
