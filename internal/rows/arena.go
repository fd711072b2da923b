// Package rows decodes the row images of go-mysql's rows events into the
// values go-mysql's own decoder gives, faster and with fewer allocations
// (decode.go), into recycled memory when asked (Arena), MariaDB's
// COMPRESSED columns included (compressed.go). The sources of the root
// package decode with it, through internal/readahead.
package rows

import (
	"sync"
	"sync/atomic"
)

// Arena is the memory of one rows event's decoded rows when the
// source recycles it (SyncerConfig.RecycleRows, DirConfig.RecycleRows):
// the slices of rows and skipped columns, the slabs the values sit in
// and the text of the temporal and DECIMAL values. Event.Release hands it
// back for the rows of a later event, so that a stream in steady state
// allocates almost nothing per row: without it the decoded rows are
// several times the binlog's size in garbage, and with them come most of
// the garbage collector's work and the page faults of a heap grown to
// hold them.
//
// An arena belongs to one event from its decoding until its Release; gen
// counts the releases, so that a Release through a stale copy of an
// Event (the arena already serves another event) does nothing.
type Arena struct {
	gen   atomic.Uint64
	rows  [][]any
	skips [][]int
	vals  slabs[any]
	text  slabs[byte]
	strs  slabs[string]
	u16   slabs[uint16]
	u32   slabs[uint32]
	ints  slabs[int]
	u64   slabs[uint64]
	f32   slabs[float32]
	f64   slabs[float64]
	bs    slabs[[]byte]
}

// arenas are the released arenas; the garbage collector empties it over
// two cycles of no use, so a stream that stops recycling frees them.
var arenas sync.Pool

// NewArena returns a released arena, or a new one.
func NewArena() *Arena {
	if a, ok := arenas.Get().(*Arena); ok {
		return a
	}
	return new(Arena)
}

// Gen is the arena's generation: the one to pass to Release.
func (a *Arena) Gen() uint64 { return a.gen.Load() }

// Release makes the arena reusable when gen is still its generation
// (the first Release of the event it was given to), dropping every
// pointer it held so that released arenas keep no event's bytes alive.
// A nil arena has nothing to release.
func (a *Arena) Release(gen uint64) {
	if a == nil || !a.gen.CompareAndSwap(gen, gen+1) {
		return
	}
	clear(a.rows)
	clear(a.skips)
	a.rows, a.skips = a.rows[:0], a.skips[:0]
	a.vals.reset(true)
	a.strs.reset(true)
	a.bs.reset(true)
	a.text.reset(false)
	a.u16.reset(false)
	a.u32.reset(false)
	a.ints.reset(false)
	a.u64.reset(false)
	a.f32.reset(false)
	a.f64.reset(false)
	arenas.Put(a)
}

// slabs are the slabs of one type an arena handed out (used) and has
// back (free).
type slabs[T any] struct {
	used, free [][]T
}

// get returns a slab of n values (zero ones when T holds pointers: reset
// zeroes those), one of the free ones when one is large enough.
func (s *slabs[T]) get(n int) []T {
	for i, x := range s.free {
		if cap(x) >= n {
			last := len(s.free) - 1
			s.free[i], s.free[last] = s.free[last], nil
			s.free = s.free[:last]
			x = x[:n] // what reset zeroes unless trimmed
			s.used = append(s.used, x)
			return x
		}
	}
	x := make([]T, n)
	s.used = append(s.used, x)
	return x
}

// trimLast records that only cur, a prefix of the last slab handed out,
// was written (nothing is recorded when cur is not from s).
func (s *slabs[T]) trimLast(cur []T) {
	if n := len(s.used); n > 0 && cap(cur) > 0 && cap(s.used[n-1]) == cap(cur) && &s.used[n-1][:1][0] == &cur[:1][0] {
		s.used[n-1] = cur
	}
}

// trimRest records that the last slab handed out was written but for
// rest, its tail.
func (s *slabs[T]) trimRest(rest []T) {
	if n := len(s.used); n > 0 {
		s.used[n-1] = s.used[n-1][:cap(s.used[n-1])-cap(rest)]
	}
}

// reset hands every used slab back, zeroing the part of each that was
// written when zero is set (slabs that hold pointers).
func (s *slabs[T]) reset(zero bool) {
	for _, x := range s.used {
		if zero {
			clear(x)
		}
		s.free = append(s.free, x)
	}
	clear(s.used)
	s.used = s.used[:0]
}
