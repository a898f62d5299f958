//! What `loadgen` reads of the server under test and of this machine from `/proc`: RSS, CPU
//! time, the kernel's TCP socket memory, and the open-files limit it raises for its own
//! miners.

/// Resident set size of `pid`, in KiB.
pub(super) fn rss_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
        .unwrap_or(0)
}

/// CPU time of `pid` (all its threads, user + system) in nanoseconds, and the number of
/// context switches of its threads (voluntary + involuntary). Threads that already exited
/// are not counted (the servers measured here keep theirs).
pub(super) fn cpu(pid: u32) -> (u64, u64) {
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return (0, 0);
    };
    tasks.flatten().fold((0, 0), |(ns, switches), task| {
        let (n, s) = task_cpu(&task.path());
        (ns + n, switches + s)
    })
}

/// CPU time (ns) and context switches of one thread, `/proc/PID/task/TID`.
pub(super) fn task_cpu(task: &std::path::Path) -> (u64, u64) {
    let ns = std::fs::read_to_string(task.join("schedstat"))
        .ok()
        .and_then(|s| s.split_whitespace().next()?.parse().ok())
        .unwrap_or(0);
    let status = std::fs::read_to_string(task.join("status")).unwrap_or_default();
    let switches = status
        .lines()
        .filter_map(|l| {
            l.strip_prefix("voluntary_ctxt_switches:")
                .or_else(|| l.strip_prefix("nonvoluntary_ctxt_switches:"))
        })
        .filter_map(|v| v.trim().parse::<u64>().ok())
        .sum();
    (ns, switches)
}

/// The kernel's TCP socket memory (`/proc/net/sockstat`, `TCP: … mem PAGES`), in KiB.
pub(super) fn tcp_mem_kib() -> u64 {
    let s = std::fs::read_to_string("/proc/net/sockstat").unwrap_or_default();
    s.lines()
        .find(|l| l.starts_with("TCP:"))
        .and_then(|l| {
            let mut w = l.split_whitespace();
            w.position(|x| x == "mem")?;
            w.next()?.parse::<u64>().ok()
        })
        .map_or(0, |pages| pages * 4)
}

/// Raises this process's open-files limit to its hard limit (every miner is a socket).
pub(super) fn raise_nofile() -> u64 {
    use rustix::process::{Resource, getrlimit, setrlimit};
    let mut limit = getrlimit(Resource::Nofile);
    if limit.maximum.is_some() && limit.current != limit.maximum {
        limit.current = limit.maximum;
        let _ = setrlimit(Resource::Nofile, limit);
    }
    getrlimit(Resource::Nofile).current.unwrap_or(u64::MAX)
}

// ===== the miners =====
