package digits

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"testing"
)

// edges: 0, each power of ten and its neighbours, the largest uint64.
func edges() []uint64 {
	vals := []uint64{0, math.MaxUint64}
	for p := uint64(1); ; p *= 10 {
		vals = append(vals, p-1, p, p+1)
		if p == 1e19 {
			return vals
		}
	}
}

// TestAppendPadded holds AppendPadded to fmt's %0*d on the edges, widths
// from none to past the digits, after what the buffer held.
func TestAppendPadded(t *testing.T) {
	for _, v := range edges() {
		for width := 0; width <= 22; width++ {
			got := string(AppendPadded([]byte("x"), v, width))
			if want := fmt.Sprintf("x%0*d", width, v); got != want {
				t.Fatalf("AppendPadded(%d, %d) = %q, want %q", v, width, got, want)
			}
		}
	}
}

// TestAppendUintAndLen: AppendUint is strconv's text and numDigits its length
// (0 for 0), on the edges and 100k random values of every size.
func TestAppendUintAndLen(t *testing.T) {
	vals := edges()
	r := rand.New(rand.NewPCG(1, 2))
	for range 100_000 {
		vals = append(vals, r.Uint64()>>r.IntN(64))
	}
	for _, v := range vals {
		want := strconv.FormatUint(v, 10)
		if got := string(AppendUint([]byte("x"), v)); got != "x"+want {
			t.Fatalf("AppendUint(%d) = %q, want %q", v, got, "x"+want)
		}
		n := len(want)
		if v == 0 {
			n = 0
		}
		if got := numDigits(v); got != n {
			t.Fatalf("numDigits(%d) = %d, want %d", v, got, n)
		}
	}
}
