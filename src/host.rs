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
    // cgroup v2, then v1; "max" or a huge number means no limit.
    let cgroup = [
        "/sys/fs/cgroup/memory.max",
        "/sys/fs/cgroup/memory/memory.limit_in_bytes",
    ]
    .iter()
    .find_map(|path| fs::read_to_string(path).ok()?.trim().parse::<u64>().ok())
    .filter(|limit| *limit < 1 << 60);
    match (machine, cgroup) {
        (Some(machine), Some(limit)) => Some(machine.min(limit)),
        (machine, limit) => machine.or(limit),
    }
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
