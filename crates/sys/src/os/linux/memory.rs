//! How much memory is free: whether reading a plan's bytes into the page cache would
//! evict anything.

/// Bytes of memory free right now (`MemFree` in `/proc/meminfo`: neither used nor
/// holding cached data); `None` if unknown.
pub fn free_memory() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/meminfo").ok()?;
    meminfo_free(&text)
}

fn meminfo_free(text: &str) -> Option<u64> {
    let line = text.lines().find(|l| l.starts_with("MemFree:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}

#[cfg(test)]
mod tests {
    #[test]
    fn free_memory_is_read_from_meminfo_in_bytes() {
        let text = "MemTotal:       24683784 kB\nMemFree:        10381328 kB\n";
        assert_eq!(super::meminfo_free(text), Some(10_381_328 * 1024));
        assert_eq!(super::meminfo_free("MemTotal: 1 kB\n"), None);
        assert!(super::free_memory().is_some_and(|b| b > 0));
    }
}
