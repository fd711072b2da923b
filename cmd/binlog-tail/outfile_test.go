package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/binlogstream/binlogstream"
)

func tokenAt(off uint64) binlogstream.ResumePosition {
	return binlogstream.StartAt(binlogstream.Position{File: "bin.000001", Offset: off})
}

func lineWith(tok binlogstream.ResumePosition, pad int) string {
	return `{"type":"query","schema":"d","query":"` + strings.Repeat("x", pad) + `","file":"bin.000001","pos":1,"resume":"` + tok.String() + "\"}\n"
}

func TestRecoverFile(t *testing.T) {
	l1, l2 := lineWith(tokenAt(100), 3), lineWith(tokenAt(200), 5)
	// A last line longer than recoverFile's read chunk.
	long := lineWith(tokenAt(300), 200<<10)
	for _, tc := range []struct {
		name    string
		content string
		want    binlogstream.ResumePosition
		lines   bool
		size    int
		err     string
	}{
		{name: "empty", content: ""},
		{name: "only a partial line", content: l1[:10], size: 0},
		{name: "one line", content: l1, want: tokenAt(100), lines: true, size: len(l1)},
		{name: "two lines", content: l1 + l2, want: tokenAt(200), lines: true, size: len(l1 + l2)},
		{name: "cut last line", content: l1 + l2[:len(l2)-1], want: tokenAt(100), lines: true, size: len(l1)},
		{name: "cut right after newline", content: l1 + l2 + "{", want: tokenAt(200), lines: true, size: len(l1 + l2)},
		{name: "long last line", content: l1 + long, want: tokenAt(300), lines: true, size: len(l1 + long)},
		{name: "long cut line", content: l2 + long[:len(long)-2], want: tokenAt(200), lines: true, size: len(l2)},
		{name: "not JSON", content: "hello\n", err: "not a binlog-tail line"},
		{name: "no resume", content: `{"type":"query"}` + "\n", err: "not a binlog-tail line"},
		{name: "bad token", content: `{"resume":"bls1.AAAA"}` + "\n", err: "invalid resume token"},
		{name: "empty token", content: `{"resume":""}` + "\n", err: "empty resume token"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "out.jsonl")
			require.NoError(t, os.WriteFile(path, []byte(tc.content), 0o644))
			f, rec, err := openOutput(path)
			if tc.err != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tc.err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, rec.Resume)
			assert.Equal(t, tc.lines, rec.Lines)
			assert.Equal(t, int64(tc.size), rec.Size)
			assert.Equal(t, int64(len(tc.content)-tc.size), rec.Cut)
			// The file is cut and positioned for appending.
			_, err = f.WriteString("next\n")
			require.NoError(t, err)
			require.NoError(t, f.Close())
			got, err := os.ReadFile(path)
			require.NoError(t, err)
			assert.Equal(t, tc.content[:tc.size]+"next\n", string(got))
		})
	}
}

// TestOutputFileModeAndLock: a new output file is 0600 (the umask may take
// more away), and a second lock on it is refused at once, naming it.
func TestOutputFileModeAndLock(t *testing.T) {
	path := filepath.Join(t.TempDir(), "out.jsonl")
	release, err := lockOutput(path)
	require.NoError(t, err)
	st, err := os.Stat(path)
	require.NoError(t, err)
	assert.Zero(t, st.Mode().Perm()&^0o600, "mode %04o", st.Mode().Perm())
	require.NoError(t, os.Remove(path))
	f, _, err := openOutput(path)
	require.NoError(t, err)
	f.Close()
	st, err = os.Stat(path)
	require.NoError(t, err)
	assert.Zero(t, st.Mode().Perm()&^0o600, "mode %04o", st.Mode().Perm())
	require.NoError(t, os.Remove(path))
	release()

	release, err = lockOutput(path)
	require.NoError(t, err)
	_, err = lockOutput(path) // flock locks of two opens conflict within one process too
	require.Error(t, err)
	assert.Contains(t, err.Error(), path+" is in use by another binlog-tail")
	release()
	release, err = lockOutput(path)
	require.NoError(t, err, "free again once released")
	release()
}
