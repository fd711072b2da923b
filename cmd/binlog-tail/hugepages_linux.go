package main

import (
	"os"
	"runtime/debug"
	"strings"
	"syscall"
	"unsafe"
)

// hugeHeapBytes is how much heap binlog-tail maps at start for transparent
// huge pages: more than its whole peak RSS on the benchmarks' workloads
// (BenchmarkRealTailMixes, BenchmarkRealHugeTransaction report it), so
// the heap seldom maps memory the advice does not cover.
const hugeHeapBytes = 64 << 20

// hugePageBytes is the size of a transparent huge page on the hosts the
// advice is for (x86-64 and arm64 with 4 KiB base pages).
const hugePageBytes = 2 << 20

// thpEnabledFile holds the kernel's transparent-huge-page mode, the
// selected one in brackets ("always [madvise] never").
const thpEnabledFile = "/sys/kernel/mm/transparent_hugepage/enabled"

// adviseHugeHeapAtStart backs binlog-tail's heap with transparent huge
// pages where the kernel gives them only to memory that asks (mode
// madvise, the default of many distributions): there each first touch of
// a 4 KiB page of heap is a page fault, thousands in a run, and one fault
// per 2 MiB costs a hundredth of that (BenchmarkHost). Go's runtime does
// not ask for them for its heap. GODEBUG=disablethp=1, the runtime's switch
// for keeping huge pages off its heap, turns this off as well.
func adviseHugeHeapAtStart() {
	mode, err := os.ReadFile(thpEnabledFile)
	if err != nil || !wantHugePages(string(mode), os.Getenv("GODEBUG")) {
		return
	}
	// Failure leaves the heap as Go maps it: slower, nothing else.
	_, _, _ = adviseHugeHeap(hugeHeapBytes)
}

// wantHugePages reports whether the heap should be advised: the kernel's
// mode (thpEnabledFile's contents) is madvise, so advice changes what a
// fault maps (under always the heap gets huge pages anyway, under never
// it cannot), and godebug (GODEBUG's value) does not set disablethp=1.
func wantHugePages(mode, godebug string) bool {
	disabled := false
	for _, setting := range strings.Split(godebug, ",") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(setting), "disablethp="); ok {
			disabled = v == "1" // the last setting wins, as in the runtime
		}
	}
	return !disabled && strings.Contains(mode, "[madvise]")
}

// adviseHugeHeap grows the Go heap by about n bytes without touching them
// (one allocation fresh from the kernel is already zero), advises the
// whole huge pages inside it with MADV_HUGEPAGE and drops it. The
// collector is off meanwhile, so that no collection can find the bytes
// still in use and pace the next ones by a heap that large; the first
// collection after frees them. The heap's later spans come from that
// advised memory, which the kernel backs by 2 MiB pages at their first
// touch. It returns the advised address range.
func adviseHugeHeap(n int) (start, end uintptr, err error) {
	gcPercent := debug.SetGCPercent(-1)
	defer debug.SetGCPercent(gcPercent)
	b := make([]byte, n)
	base := uintptr(unsafe.Pointer(unsafe.SliceData(b)))
	start = (base + hugePageBytes - 1) &^ (hugePageBytes - 1)
	end = (base + uintptr(n)) &^ (hugePageBytes - 1)
	if start < end {
		err = syscall.Madvise(b[start-base:end-base], syscall.MADV_HUGEPAGE)
	}
	if start >= end || err != nil {
		return 0, 0, err
	}
	return start, end, nil
}
