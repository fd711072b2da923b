package binlogstream_test

import (
	"runtime"
	"syscall"
	"testing"
	"time"
)

// BenchmarkHost measures what the machine charges for the three things
// that separate this package's figures from one host to the next: a page
// fault on fresh memory (a Go heap that grows takes one per 4 KiB page),
// a system call, and a wakeup of a goroutine on another thread (every
// handoff between the stream's goroutines can cost one). A multithreaded
// Go program pays them more often than a single-threaded C one such as
// mariadb-binlog, so a comparison of the two is read with these costs of
// the host it ran on (docs/performance.md gives them side by side).
func BenchmarkHost(b *testing.B) {
	const size = 8 << 20
	page := syscall.Getpagesize()
	fault := func(b *testing.B, advice int) {
		var d time.Duration
		for b.Loop() {
			m, err := syscall.Mmap(-1, 0, size, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE)
			if err != nil {
				b.Fatal(err)
			}
			if advice != 0 {
				if err := syscall.Madvise(m, advice); err != nil {
					syscall.Munmap(m)
					b.Skipf("madvise: %v", err)
				}
			}
			t := time.Now()
			for i := 0; i < size; i += page {
				m[i] = 1
			}
			d += time.Since(t)
			if err := syscall.Munmap(m); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(d.Nanoseconds())/1e3/float64(b.N*(size/page)), "us/page")
	}
	b.Run("page-fault", func(b *testing.B) { fault(b, 0) })
	// Transparent huge pages where the kernel gives them on request (the
	// Go runtime does not ask for them for its heap).
	b.Run("page-fault-hugepage", func(b *testing.B) { fault(b, syscall.MADV_HUGEPAGE) })
	b.Run("syscall", func(b *testing.B) {
		n := 0
		for b.Loop() {
			syscall.Syscall(syscall.SYS_GETPPID, 0, 0, 0)
			n++
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(n), "ns/syscall")
	})
	b.Run("wakeup", func(b *testing.B) {
		if runtime.GOMAXPROCS(0) < 2 {
			b.Skip("needs two threads")
		}
		// Two goroutines on two threads pass a token back and forth: each
		// pass wakes the other thread (unless it is still spinning).
		ping, pong := make(chan struct{}), make(chan struct{})
		done := make(chan struct{})
		go func() {
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			for range ping {
				pong <- struct{}{}
			}
			close(done)
		}()
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		n := 0
		for b.Loop() {
			ping <- struct{}{}
			<-pong
			n++
		}
		close(ping)
		<-done
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(2*n), "ns/wakeup")
	})
}
