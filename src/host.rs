//! Facts about the machine and this process, read from the operating system for `hostInfo` and
//! `serverStatus`. Every reading degrades to a neutral value when the OS does not provide it.

use std::fs;

/// The machine's host name, read once (every operation's `currentOp` entry names it).
pub fn hostname() -> String {
    static NAME: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    NAME.get_or_init(|| {
        fs::read_to_string("/proc/sys/kernel/hostname")
            .or_else(|_| fs::read_to_string("/etc/hostname"))
            .map(|s| s.trim().to_owned())
            .ok()
            .filter(|s| !s.is_empty())
            .unwrap_or_else(|| "localhost".to_owned())
    })
    .clone()
}

/// Turns transparent huge pages off for this process (`prctl(PR_SET_THP_DISABLE)`), as
/// MongoDB's production notes advise for mongod 7.0, and says whether it did: on Linux only.
///
/// The allocator asks for huge pages on the memory it maps (`madvise(MADV_HUGEPAGE)`), so the
/// first touch of any part of a 2 MiB region made the kernel zero all of it. Under a bulk load,
/// whose request buffers and records are allocated on one thread and freed on another, that
/// zeroing took 6–13% of the server's samples, and loads ran about 17% faster without it
/// (docs/benchmarks.md, "Transparent huge pages off").
pub fn disable_transparent_huge_pages() -> std::io::Result<bool> {
    #[cfg(target_os = "linux")]
    {
        rustix::thread::disable_transparent_huge_pages(true)?;
        Ok(true)
    }
    #[cfg(not(target_os = "linux"))]
    {
        Ok(false)
    }
}

pub fn num_cores() -> i32 {
    std::thread::available_parallelism()
        .map(|n| i32::try_from(n.get()).unwrap_or(i32::MAX))
        .unwrap_or(1)
}

/// Total memory in MiB, from `/proc/meminfo`.
pub fn mem_size_mb() -> i64 {
    read_kib_field("/proc/meminfo", "MemTotal:").map_or(0, |kib| kib / 1024)
}

/// The memory this process may use, in bytes: the machine's (`/proc/meminfo`), or the cgroup's
/// limit (a container's) when that is lower. `None` when the OS does not say.
pub fn memory_limit_bytes() -> Option<u64> {
    let machine = read_kib_field("/proc/meminfo", "MemTotal:")
        .and_then(|kib| u64::try_from(kib).ok())
        .map(|kib| kib.saturating_mul(1024));
    let cgroup = fs::read_to_string("/proc/self/cgroup")
        .ok()
        .and_then(|own| cgroup_limit(std::path::Path::new("/sys/fs/cgroup"), &own));
    match (machine, cgroup) {
        (Some(machine), Some(limit)) => Some(machine.min(limit)),
        (machine, limit) => machine.or(limit),
    }
}

/// The lowest memory limit of this process's cgroup and its ancestors, under `root` (where the
/// cgroup file systems are mounted), given `/proc/self/cgroup`'s text: cgroup v2's
/// `memory.max` along the unified hierarchy's path (`0::/path`), and cgroup v1's
/// `memory.limit_in_bytes` along the memory controller's (`N:...memory...:/path`), each also
/// at the mount's root, which is the container's own cgroup under a cgroup namespace. "max"
/// or a huge number means no limit.
pub fn cgroup_limit(root: &std::path::Path, own: &str) -> Option<u64> {
    let mut candidates: Vec<std::path::PathBuf> = Vec::new();
    let mut along = |base: std::path::PathBuf, path: &str, file: &str| {
        let mut dir = base.clone();
        candidates.push(base.join(file));
        for part in path.split('/').filter(|p| !p.is_empty() && *p != "..") {
            dir.push(part);
            candidates.push(dir.join(file));
        }
    };
    for line in own.lines() {
        let mut fields = line.splitn(3, ':');
        let (Some(_), Some(controllers), Some(path)) =
            (fields.next(), fields.next(), fields.next())
        else {
            continue;
        };
        if controllers.is_empty() {
            along(root.to_path_buf(), path, "memory.max");
        } else if controllers.split(',').any(|c| c == "memory") {
            along(root.join("memory"), path, "memory.limit_in_bytes");
        }
    }
    candidates
        .iter()
        .filter_map(|file| fs::read_to_string(file).ok()?.trim().parse::<u64>().ok())
        .filter(|limit| *limit < 1 << 60)
        .min()
}

/// This process's resident size in bytes, from `/proc/self/status` (one short read: cheap
/// enough to sample every few milliseconds); `None` where there is no such file.
pub fn resident_bytes() -> Option<u64> {
    let kib = read_kib_field("/proc/self/status", "VmRSS:")?;
    u64::try_from(kib).ok().map(|k| k.saturating_mul(1024))
}

/// Resident and virtual size of this process in MiB, from `/proc/self/status`.
pub fn process_mem_mb() -> (i64, i64) {
    let resident = read_kib_field("/proc/self/status", "VmRSS:").unwrap_or(0) / 1024;
    let virt = read_kib_field("/proc/self/status", "VmSize:").unwrap_or(0) / 1024;
    (resident, virt)
}

/// The operating system's pretty name and kernel version.
pub fn os_name_and_version() -> (String, String) {
    let name = fs::read_to_string("/etc/os-release")
        .ok()
        .and_then(|text| {
            text.lines()
                .find_map(|l| l.strip_prefix("PRETTY_NAME="))
                .map(|v| v.trim_matches('"').to_owned())
        })
        .unwrap_or_else(|| std::env::consts::OS.to_owned());
    let version = fs::read_to_string("/proc/sys/kernel/osrelease")
        .map(|s| s.trim().to_owned())
        .unwrap_or_default();
    (name, version)
}

fn read_kib_field(path: &str, field: &str) -> Option<i64> {
    let text = fs::read_to_string(path).ok()?;
    let line = text.lines().find(|l| l.starts_with(field))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::cgroup_limit;

    #[test]
    fn the_resident_size_is_read_from_the_process_status() {
        // The process's own figure moves with every other test of this binary, so only its
        // presence is checked; the reading itself is the status file's VmRSS in bytes.
        let resident = super::resident_bytes().expect("Linux has /proc/self/status");
        assert!(resident > 0);
        let dir = tempfile::tempdir().unwrap();
        let status = dir.path().join("status");
        std::fs::write(
            &status,
            "Name:\tmayfly\nVmSize:\t  900 kB\nVmRSS:\t  1536 kB\n",
        )
        .unwrap();
        assert_eq!(
            super::read_kib_field(status.to_str().unwrap(), "VmRSS:"),
            Some(1536)
        );
    }

    #[test]
    fn cgroup_limits_are_read_along_the_process_path_in_v2_and_v1() {
        let root = tempfile::tempdir().unwrap();
        let write = |path: &str, text: &str| {
            let file = root.path().join(path);
            std::fs::create_dir_all(file.parent().unwrap()).unwrap();
            std::fs::write(file, text).unwrap();
        };
        // v2: the root says nothing, the service's own cgroup is limited, a parent is higher.
        write("memory.max", "max\n");
        write("system.slice/memory.max", "4294967296\n");
        write("system.slice/mayfly.service/memory.max", "1073741824\n");
        let v2 = "0::/system.slice/mayfly.service\n";
        assert_eq!(cgroup_limit(root.path(), v2), Some(1 << 30));
        // v1: the memory controller's hierarchy, listed with others.
        write("memory/docker/abc/memory.limit_in_bytes", "536870912\n");
        write("memory/memory.limit_in_bytes", "9223372036854771712\n");
        let v1 = "12:cpu,cpuacct:/docker/abc\n4:memory:/docker/abc\n1:name=systemd:/docker/abc\n";
        assert_eq!(cgroup_limit(root.path(), v1), Some(512 << 20));
        // No limit anywhere.
        assert_eq!(cgroup_limit(root.path(), "0::/\n"), None);
        assert_eq!(cgroup_limit(root.path(), ""), None);
    }

    /// The kernel reports the flag set for the process.
    #[cfg(target_os = "linux")]
    #[test]
    fn transparent_huge_pages_are_turned_off_for_the_process() {
        assert!(super::disable_transparent_huge_pages().unwrap());
        assert!(rustix::thread::transparent_huge_pages_are_disabled().unwrap());
        let status = std::fs::read_to_string("/proc/self/status").unwrap();
        // Kernels from 6.x name the outcome; older ones do not list it.
        if let Some(line) = status.lines().find(|l| l.starts_with("THP_enabled:")) {
            assert_eq!(line.split_whitespace().nth(1), Some("0"), "{line}");
        }
    }
}
