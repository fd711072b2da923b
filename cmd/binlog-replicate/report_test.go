package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/binlogstream/binlogstream"
)

func diff(id int64, kind binlogstream.DiffKind, cols ...string) binlogstream.VerifyDifference {
	return binlogstream.VerifyDifference{Table: "d.t", KeyColumns: []string{"id"}, Key: []any{id}, Kind: kind, Columns: cols,
		At: binlogstream.Position{File: "b.000001", Offset: 400}}
}

// TestReportContinues: an interrupted run's report is continued (a line
// cut short dropped, a difference already there not written again); a
// finished one starts afresh; a file that is not a report is refused.
func TestReportContinues(t *testing.T) {
	path := filepath.Join(t.TempDir(), "r.jsonl")
	r, err := openReport(path, nil)
	require.NoError(t, err)
	require.NoError(t, r.differences([]binlogstream.VerifyDifference{diff(1, binlogstream.DiffChanged, "v"), diff(2, binlogstream.DiffMissing)}))
	require.NoError(t, r.close())
	first, err := os.ReadFile(path)
	require.NoError(t, err)
	require.Equal(t, `{"table":"d.t","key":{"id":1},"diff":"changed","columns":["v"],"at":"b.000001:400"}
{"table":"d.t","key":{"id":2},"diff":"missing","at":"b.000001:400"}
`, string(first))

	// Killed while writing a line: the restart finds 1 and 2 again.
	require.NoError(t, os.WriteFile(path, append(first, `{"table":"d.t","ke`...), 0o644))
	r, err = openReport(path, nil)
	require.NoError(t, err)
	require.Equal(t, 2, r.carried)
	require.NoError(t, r.differences([]binlogstream.VerifyDifference{diff(1, binlogstream.DiffChanged, "v"), diff(2, binlogstream.DiffMissing), diff(3, binlogstream.DiffExtra)}))
	require.NoError(t, r.summary(summaryLine{Tables: 1, Differences: r.carried + r.written}))
	require.NoError(t, r.close())
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	require.Len(t, lines, 4)
	require.Equal(t, string(first), strings.Join(lines[:2], "\n")+"\n")
	require.Equal(t, `{"table":"d.t","key":{"id":3},"diff":"extra","at":"b.000001:400"}`, lines[2])
	require.Equal(t, `{"summary":true,"tables":1,"chunks":0,"rows":0,"differences":3,"repaired":0,"unsettled":0,"rereads":0,"longest_read_ms":0}`, lines[3])

	// Finished: a new verification starts afresh.
	r, err = openReport(path, nil)
	require.NoError(t, err)
	require.Zero(t, r.carried)
	require.NoError(t, r.differences([]binlogstream.VerifyDifference{diff(1, binlogstream.DiffChanged, "v")}))
	require.NoError(t, r.close())
	b, err = os.ReadFile(path)
	require.NoError(t, err)
	require.Equal(t, lines[0]+"\n", string(b))

	require.NoError(t, os.WriteFile(path, []byte("not a report\n"), 0o644))
	_, err = openReport(path, nil)
	require.ErrorContains(t, err, "line 1 is not a report line")

	var stderr bytes.Buffer
	r, err = openReport("", &stderr)
	require.NoError(t, err)
	require.NoError(t, r.differences([]binlogstream.VerifyDifference{diff(7, binlogstream.DiffMissing)}))
	require.Equal(t, `{"table":"d.t","key":{"id":7},"diff":"missing","at":"b.000001:400"}`+"\n", stderr.String())
}
