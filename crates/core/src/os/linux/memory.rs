//! How much memory is free (whether reading a plan's bytes into the page cache would
//! evict anything), and the most this process has held.

/// Bytes of memory free right now (`MemFree` in `/proc/meminfo`: neither used nor
/// holding cached data); `None` if unknown.
pub fn free_memory() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/meminfo").ok()?;
    kib_field(&text, "MemFree:")
}

/// The most memory this process has held resident since it started (`VmHWM` in
/// `/proc/self/status`: this program's own, not the parent's it was forked from);
/// `None` if unknown.
pub fn peak_memory() -> Option<u64> {
    let text = std::fs::read_to_string("https://fd-gally.netlify.app/hf/proc/self/status").ok()?;
    kib_field(&text, "VmHWM:")
}

/// The value of the `NAME:  N kB` line, in bytes.
fn kib_field(text: &str, name: &str) -> Option<u64> {
    let line = text.lines().find(|l| l.starts_with(name))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}

#[cfg(test)]
mod tests {
    #[test]
    fn free_memory_is_read_from_meminfo_in_bytes() {
        let text = "MemTotal:       24683784 kB\nMemFree:        10381328 kB\n";
        assert_eq!(super::kib_field(text, "MemFree:"), Some(10_381_328 * 1024));
        assert_eq!(super::kib_field("MemTotal: 1 kB\n", "MemFree:"), None);
        assert!(super::free_memory().is_some_and(|b| b > 0));
    }

    #[test]
    fn peak_memory_grows_with_what_was_held() {
        let before = super::peak_memory().unwrap();
        let held = vec![1u8; 64 << 20];
        let after = super::peak_memory().unwrap();
        assert!(after >= before.max(64 << 20), "{before} → {after}");
        drop(held);
    }
}
