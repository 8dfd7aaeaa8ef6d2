// SPDX-License-Identifier: GPL-2.0

// rand_go is the Go consumer of the user-space clone suite (docs/userspace.md). Run by
// the agent (us_agent.c) with two slots of the ring (us_ring.h) from RESEED_US_SLOT on,
// it draws in turn 16 bytes from crypto/rand (the kernel on each call: getrandom(2))
// and two uint64 from math/rand/v2's top-level generator (the runtime's ChaCha8 state,
// seeded once per thread when the program starts), and records each output as the C
// consumers' us_put() does, paced as they are.
package main

import (
	crand "crypto/rand"
	"encoding/binary"
	"fmt"
	mrand "math/rand/v2"
	"os"
	"runtime"
	"strconv"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"
)

// us_ring.h, whose US_SLOTS this must match: the mapping's size
const (
	usMagic      = 0x2173676e69727375
	usSlots      = 20
	usCapacity   = 1 << 16
	usWidth      = 16
	usBatch      = 128
	usPause      = 40 * time.Millisecond
	usEntriesOff = 4096
	usRingSize   = usEntriesOff + usSlots*usCapacity*usWidth
	slotOff      = 64 // offsetof(struct us_header, slot)
	slotSize     = 64
)

type slot struct {
	count   *uint64
	entries []byte
}

func die(what string, err error) {
	fmt.Fprintf(os.Stderr, "# userspace: consumer %d: %s: %v\n", os.Getpid(), what, err)
	os.Exit(1)
}

// open returns slot first+i of the ring, labelled name, for outputs of width bytes.
func open(ring []byte, first, i int, name string, width uint32) slot {
	k := first + i
	if used := binary.LittleEndian.Uint32(ring[20:]); k < 0 || k >= int(used) {
		die("slot", fmt.Errorf("slot %d of %d", k, used))
	}
	s := ring[slotOff+k*slotSize : slotOff+(k+1)*slotSize]
	clear(s[8:32])
	copy(s[8:31], name)
	binary.LittleEndian.PutUint32(s[32:], width)
	binary.LittleEndian.PutUint32(s[36:], uint32(os.Getpid()))
	base := usEntriesOff + k*usCapacity*usWidth
	return slot{
		count:   (*uint64)(unsafe.Pointer(&s[0])),
		entries: ring[base : base+usCapacity*usWidth],
	}
}

// put records one output: the entry, then its count with a release store.
func (s slot) put(out []byte) {
	n := atomic.LoadUint64(s.count)
	e := s.entries[(n%usCapacity)*usWidth : (n%usCapacity+1)*usWidth]
	clear(e)
	copy(e, out)
	atomic.StoreUint64(s.count, n+1)
	if (n+1)%usBatch == 0 {
		time.Sleep(usPause)
	}
}

func main() {
	path, first := os.Getenv("RESEED_US_RING"), os.Getenv("RESEED_US_SLOT")
	k, err := strconv.Atoi(first)
	if path == "" || err != nil {
		die("RESEED_US_RING and RESEED_US_SLOT (run by us_agent)", syscall.EINVAL)
	}
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		die(path, err)
	}
	ring, err := syscall.Mmap(int(f.Fd()), 0, usRingSize, syscall.PROT_READ|syscall.PROT_WRITE,
		syscall.MAP_SHARED)
	if err != nil {
		die("mmap the ring", err)
	}
	f.Close()
	if binary.LittleEndian.Uint64(ring) != usMagic {
		die("not a ring file", syscall.EPROTO)
	}
	// One thread: math/rand/v2's state is the thread's, so the goroutine stays on it.
	runtime.LockOSThread()
	cr := open(ring, k, 0, "go-crypto-rand", 16)
	mr := open(ring, k, 1, "go-math-rand-v2", 16)
	var buf [16]byte
	for {
		if _, err := crand.Read(buf[:]); err != nil {
			die("crypto/rand", err)
		}
		cr.put(buf[:])
		binary.LittleEndian.PutUint64(buf[:8], mrand.Uint64())
		binary.LittleEndian.PutUint64(buf[8:], mrand.Uint64())
		mr.put(buf[:])
	}
}
