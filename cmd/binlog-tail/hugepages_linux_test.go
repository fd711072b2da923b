package main

import (
	"bufio"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestWantHugePages(t *testing.T) {
	for _, tc := range []struct {
		mode, godebug string
		want          bool
	}{
		{"always [madvise] never\n", "", true},
		{"[always] madvise never\n", "", false},
		{"always madvise [never]\n", "", false},
		{"", "", false},
		{"always [madvise] never\n", "disablethp=1", false},
		{"always [madvise] never\n", "gctrace=1, disablethp=1", false},
		{"always [madvise] never\n", "disablethp=0", true},
		{"always [madvise] never\n", "madvdontneed=1", true},
		{"always [madvise] never\n", "disablethp=1,disablethp=0", true},
		{"always [madvise] never\n", "disablethp=0,disablethp=1", false},
	} {
		require.Equal(t, tc.want, wantHugePages(tc.mode, tc.godebug), "mode %q GODEBUG %q", tc.mode, tc.godebug)
	}
}

// TestAdviseHugeHeap: the range adviseHugeHeap returns lies in mappings
// the kernel flags for huge pages ("hg" in smaps' VmFlags), whatever the
// host's mode, and spans all but the ends of the bytes asked for.
func TestAdviseHugeHeap(t *testing.T) {
	if _, err := os.Stat(thpEnabledFile); err != nil {
		t.Skipf("kernel without transparent huge pages: %v", err)
	}
	const n = 16 << 20
	start, end, err := adviseHugeHeap(n)
	require.NoError(t, err)
	require.GreaterOrEqual(t, end-start, uintptr(n-2*hugePageBytes))
	require.Zero(t, start%hugePageBytes)

	f, err := os.Open("/proc/self/smaps")
	require.NoError(t, err)
	defer f.Close()
	covered := start
	var lo, hi uint64
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if fields := strings.Fields(line); len(fields) > 0 && strings.Count(fields[0], "-") == 1 && !strings.HasSuffix(fields[0], ":") {
			l, h, _ := strings.Cut(fields[0], "-")
			lo, _ = strconv.ParseUint(l, 16, 64)
			hi, _ = strconv.ParseUint(h, 16, 64)
			continue
		}
		flags, ok := strings.CutPrefix(line, "VmFlags:")
		if !ok || uintptr(hi) <= start || uintptr(lo) >= end {
			continue
		}
		require.Contains(t, strings.Fields(flags), "hg", "mapping %x-%x inside the advised %x-%x", lo, hi, start, end)
		require.LessOrEqual(t, uintptr(lo), covered, "gap before mapping %x-%x", lo, hi)
		covered = max(covered, uintptr(hi))
	}
	require.NoError(t, sc.Err())
	require.GreaterOrEqual(t, covered, end, "advised range %x-%x not all mapped", start, end)
}
