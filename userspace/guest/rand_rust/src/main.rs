// SPDX-License-Identifier: GPL-2.0

//! rand_rust is the Rust consumer of the user-space clone suite (docs/userspace.md).
//! Run by the agent (us_agent.c) with one slot of the ring (us_ring.h), it draws 16
//! bytes at a time from rand's `thread_rng()` (ChaCha12, reseeded from the kernel after
//! every 64 KiB it gives out, and in a child after fork) and records each output as the
//! C consumers' `us_put()` does, paced as they are.

use rand::RngCore;
use std::ffi::CString;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

// us_ring.h, whose US_SLOTS this must match: the mapping's size
const US_MAGIC: u64 = 0x2173676e69727375;
const US_SLOTS: usize = 20;
const US_CAPACITY: u64 = 1 << 16;
const US_WIDTH: usize = 16;
const US_BATCH: u64 = 128;
const US_PAUSE: Duration = Duration::from_millis(40);
const US_ENTRIES_OFF: usize = 4096;
const US_RING_SIZE: usize = US_ENTRIES_OFF + US_SLOTS * US_CAPACITY as usize * US_WIDTH;
const SLOT_OFF: usize = 64; // offsetof(struct us_header, slot)
const SLOT_SIZE: usize = 64;

fn die(what: &str, err: std::io::Error) -> ! {
    eprintln!("# userspace: consumer {}: {}: {}", std::process::id(), what, err);
    std::process::exit(1);
}

struct Slot {
    count: &'static AtomicU64,
    entries: &'static mut [u8],
}

impl Slot {
    /// Slot `k` of the ring, labelled `name`, for outputs of `width` bytes.
    fn open(ring: &'static mut [u8], k: usize, name: &str, width: u32) -> Slot {
        let used = u32::from_le_bytes(ring[20..24].try_into().unwrap()) as usize;
        if k >= used {
            die("slot", std::io::Error::from_raw_os_error(libc::ERANGE));
        }
        let (head, rest) = ring.split_at_mut(US_ENTRIES_OFF);
        let s = &mut head[SLOT_OFF + k * SLOT_SIZE..SLOT_OFF + (k + 1) * SLOT_SIZE];
        s[8..32].fill(0);
        let n = name.len().min(23);
        s[8..8 + n].copy_from_slice(&name.as_bytes()[..n]);
        s[32..36].copy_from_slice(&width.to_le_bytes());
        s[36..40].copy_from_slice(&std::process::id().to_le_bytes());
        let base = k * US_CAPACITY as usize * US_WIDTH;
        // SAFETY: the count is the slot's first, 8-byte aligned word (the mapping is
        // page-aligned), and this process is its one writer.
        let count = unsafe { &*(s.as_mut_ptr() as *const AtomicU64) };
        Slot { count, entries: &mut rest[base..base + US_CAPACITY as usize * US_WIDTH] }
    }

    /// One output: the entry, then its count with a release store.
    fn put(&mut self, out: &[u8]) {
        let n = self.count.load(Ordering::Relaxed);
        let at = (n % US_CAPACITY) as usize * US_WIDTH;
        let e = &mut self.entries[at..at + US_WIDTH];
        e.fill(0);
        let len = out.len().min(US_WIDTH);
        e[..len].copy_from_slice(&out[..len]);
        self.count.store(n + 1, Ordering::Release);
        if (n + 1) % US_BATCH == 0 {
            std::thread::sleep(US_PAUSE);
        }
    }
}

fn main() {
    let (path, first) = match (std::env::var("RESEED_US_RING"), std::env::var("RESEED_US_SLOT")) {
        (Ok(p), Ok(f)) => (p, f),
        _ => die(
            "RESEED_US_RING and RESEED_US_SLOT unset (run by us_agent)",
            std::io::Error::from_raw_os_error(libc::EINVAL),
        ),
    };
    let k: usize = first
        .parse()
        .unwrap_or_else(|_| die("RESEED_US_SLOT", std::io::Error::from_raw_os_error(libc::EINVAL)));
    let cpath = CString::new(path.clone()).unwrap();
    // SAFETY: plain libc calls; the mapping lives as long as the process.
    let ring: &'static mut [u8] = unsafe {
        let fd = libc::open(cpath.as_ptr(), libc::O_RDWR | libc::O_CLOEXEC);
        if fd < 0 {
            die(&path, std::io::Error::last_os_error());
        }
        let p = libc::mmap(
            std::ptr::null_mut(),
            US_RING_SIZE,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_SHARED,
            fd,
            0,
        );
        if p == libc::MAP_FAILED {
            die("mmap the ring", std::io::Error::last_os_error());
        }
        libc::close(fd);
        std::slice::from_raw_parts_mut(p as *mut u8, US_RING_SIZE)
    };
    if u64::from_le_bytes(ring[0..8].try_into().unwrap()) != US_MAGIC {
        die("not a ring file", std::io::Error::from_raw_os_error(libc::EPROTO));
    }
    let mut slot = Slot::open(ring, k, "rust-thread-rng", 16);
    let mut rng = rand::thread_rng();
    let mut buf = [0u8; 16];
    loop {
        rng.fill_bytes(&mut buf);
        slot.put(&buf);
    }
}
