//! How much memory this process may use: its memory cgroup's limit
//! ([`cgroup_memory_limit`], which the server sizes its caches to), and
//! what it could still use, the smaller of the kernel's `MemAvailable` and,
//! when the process runs in a memory cgroup with a limit, that limit less
//! the group's usage (page cache included), and the machine's total
//! ([`mem_total`]).
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
    meminfo_bytes(meminfo, "MemAvailable:")
}

/// `MemTotal` (the machine's memory) of a `/proc/meminfo` text, in bytes.
pub fn mem_total(meminfo: &str) -> Option<u64> {
    meminfo_bytes(meminfo, "MemTotal:")
}

/// The field `name` (with its colon) of a `/proc/meminfo` text, in bytes.
fn meminfo_bytes(meminfo: &str, name: &str) -> Option<u64> {
    let line = meminfo.lines().find(|l| l.starts_with(name))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    kib.checked_mul(1024)
}

/// The memory limit of the process's cgroup, the smallest along its path:
/// `cgroups` is `/proc/self/cgroup`'s text, `root` the cgroup mount
/// (`/sys/fs/cgroup`). cgroup v1's `memory` controller
/// (`memory.limit_in_bytes` under `root/memory`) or v2's unified
/// hierarchy (`memory.max`); "max" or v1's near-2^63 "unlimited" is none.
/// A path the mount does not show (a container's own namespace) falls
/// back to the mount's top.
pub fn cgroup_memory_limit(cgroups: &str, root: &Path) -> Option<u64> {
    limited_groups(cgroups, root).map(|g| g.limit).min()
}

/// Limit less usage of the cgroups along the process's path (as
/// [`cgroup_memory_limit`] finds them) that report both, the least of
/// them; `None` without a limit.
fn cgroup_headroom(cgroups: &str, root: &Path) -> Option<u64> {
    limited_groups(cgroups, root)
        .filter_map(|g| Some(g.limit.saturating_sub(g.usage?)))
        .min()
}

/// A memory cgroup with a limit, and its usage when readable.
struct LimitedGroup {
    limit: u64,
    usage: Option<u64>,
}

/// Every cgroup with a memory limit on the paths that `cgroups` (the text
/// of `/proc/self/cgroup`) names under the mount `root`, leaf first.
fn limited_groups<'a>(cgroups: &'a str, root: &'a Path) -> impl Iterator<Item = LimitedGroup> + 'a {
    let read = |p: &Path| -> Option<u64> { std::fs::read_to_string(p).ok()?.trim().parse().ok() };
    cgroups.lines().flat_map(move |line| {
        // "hierarchy-id:controllers:path"
        let mut f = line.splitn(3, ':');
        let (controllers, path) = match (f.next(), f.next(), f.next()) {
            (Some(_), Some(c), Some(p)) => (c, p),
            _ => ("-", ""),
        };
        let (base, limit_file, usage_file) = if controllers.split(',').any(|c| c == "memory") {
            (
                root.join("memory"),
                "memory.limit_in_bytes",
                "memory.usage_in_bytes",
            )
        } else if controllers.is_empty() {
            (root.to_path_buf(), "memory.max", "memory.current")
        } else {
            return Vec::new();
        };
        let mut dir = base.join(path.trim_start_matches('/'));
        if !dir.is_dir() {
            dir = base.clone();
        }
        let mut found = Vec::new();
        loop {
            // v1 reports "no limit" as a page-rounded i64::MAX.
            if let Some(limit) = read(&dir.join(limit_file)).filter(|&l| l < 1 << 60) {
                found.push(LimitedGroup {
                    limit,
                    usage: read(&dir.join(usage_file)),
                });
            }
            if dir == base || !dir.pop() {
                break;
            }
        }
        found
    })
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
    /// The cgroup limit is found for v1 (`memory` controller) and v2
    /// (unified), as the smallest along the path, with "max" and v1's
    /// "unlimited" read as none, and a path the mount does not show read
    /// at the mount's top (a container's namespace).
    #[test]
    fn cgroup_memory_limit_reads_v1_and_v2_and_takes_the_smallest_on_the_path() {
        let root = tempfile::tempdir().unwrap();
        let put = |rel: &str, file: &str, v: &str| {
            let d = root.path().join(rel);
            std::fs::create_dir_all(&d).unwrap();
            std::fs::write(d.join(file), v).unwrap();
        };
        // v1: the group's own limit, under an unlimited parent.
        put("memory", "memory.limit_in_bytes", "9223372036854771712\n");
        put(
            "memory/svc",
            "memory.limit_in_bytes",
            "9223372036854771712\n",
        );
        put("memory/svc/db", "memory.limit_in_bytes", "268435456\n");
        let v1 = "9:name=systemd:/\n5:cpu,cpuacct:/\n4:memory:/svc/db\n";
        assert_eq!(cgroup_memory_limit(v1, root.path()), Some(256 << 20));
        // A parent's smaller limit wins.
        put("memory/svc", "memory.limit_in_bytes", "134217728\n");
        assert_eq!(cgroup_memory_limit(v1, root.path()), Some(128 << 20));
        // Unlimited all the way: none.
        assert_eq!(cgroup_memory_limit("4:memory:/\n", root.path()), None);
        // A path the mount does not show: the mount's top.
        put("memory", "memory.limit_in_bytes", "536870912\n");
        assert_eq!(
            cgroup_memory_limit("4:memory:/docker/abc\n", root.path()),
            Some(512 << 20)
        );

        let root = tempfile::tempdir().unwrap();
        let put = |rel: &str, v: &str| {
            let d = root.path().join(rel);
            std::fs::create_dir_all(&d).unwrap();
            std::fs::write(d.join("memory.max"), v).unwrap();
        };
        put("app.slice", "max\n");
        put("app.slice/db.service", "1073741824\n");
        let v2 = "0::/app.slice/db.service\n";
        assert_eq!(cgroup_memory_limit(v2, root.path()), Some(1 << 30));
        put("app.slice/db.service", "max\n");
        assert_eq!(cgroup_memory_limit(v2, root.path()), None);
        // Nothing readable (no cgroup fs): none.
        assert_eq!(cgroup_memory_limit("garbage\n", root.path()), None);
        assert_eq!(cgroup_memory_limit("", root.path()), None);
    }
}
