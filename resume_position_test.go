package binlogstream_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/binlogstream/binlogstream"
)

func pos(file string, off uint64) binlogstream.Position {
	return binlogstream.Position{File: file, Offset: off}
}

func TestPositionCompare(t *testing.T) {
	tests := []struct {
		a, b binlogstream.Position
		want int
	}{
		{pos("mysql-bin.000001", 4), pos("mysql-bin.000001", 4), 0},
		{pos("mysql-bin.000001", 4), pos("mysql-bin.000001", 120), -1},
		{pos("mysql-bin.000002", 4), pos("mysql-bin.000001", 9999), 1},
		{pos("mysql-bin.999999", 4), pos("mysql-bin.1000000", 4), -1}, // suffix grows a digit
		{pos("mysql-bin.000009", 4), pos("mysql-bin.000010", 4), -1},
		{pos("a.000001", 1<<33), pos("a.000001", 1<<32+5), 1}, // 64-bit offsets
	}
	for _, tc := range tests {
		assert.Equal(t, tc.want, tc.a.Compare(tc.b), "%s vs %s", tc.a, tc.b)
		assert.Equal(t, -tc.want, tc.b.Compare(tc.a), "%s vs %s", tc.b, tc.a)
	}
}

func TestParsePosition(t *testing.T) {
	p, err := binlogstream.ParsePosition("mysql-bin.000003:5000000000")
	require.NoError(t, err)
	assert.Equal(t, pos("mysql-bin.000003", 5000000000), p)
	assert.Equal(t, "mysql-bin.000003:5000000000", p.String())
	for _, bad := range []string{"", "mysql-bin.000003", ":4", "f:", "f:x", "f:-1"} {
		_, err := binlogstream.ParsePosition(bad)
		assert.Error(t, err, bad)
	}
}

func sampleResumePositions() []binlogstream.ResumePosition {
	return []binlogstream.ResumePosition{
		binlogstream.StartAt(pos("mysql-bin.000001", 4)),
		{Safe: pos("mysql-bin.000001", 120), Streamed: pos("mysql-bin.000001", 98779848)},
		{Safe: pos("mysql-bin.000001", 1<<32+7), Streamed: pos("mysql-bin.000001", math.MaxUint64), Rows: math.MaxUint32},
		{Safe: pos("mysql-bin.000001", 900), Streamed: pos("mysql-bin.000002", 4)},
		{Safe: pos("m.000007", 400), Streamed: pos("m.000007", 900), Rows: 3, InTxn: true, GTID: "0-1-42"},
		{Safe: pos("m.000007", 400), Streamed: pos("m.000007", 400), InTxn: true,
			GTID: "3e11fa47-71ca-11e1-9e33-c80aa9429562:23"},
	}
}

func TestResumePositionTokenRoundTrip(t *testing.T) {
	for _, r := range sampleResumePositions() {
		tok := r.String()
		assert.True(t, strings.HasPrefix(tok, "bls1."), tok)
		got, err := binlogstream.ParseResumePosition(tok)
		require.NoError(t, err, tok)
		assert.Equal(t, r, got)

		b, err := json.Marshal(struct{ P binlogstream.ResumePosition }{r})
		require.NoError(t, err)
		var back struct{ P binlogstream.ResumePosition }
		require.NoError(t, json.Unmarshal(b, &back))
		assert.Equal(t, r, back.P)
	}
	zero, err := binlogstream.ParseResumePosition("")
	require.NoError(t, err)
	assert.True(t, zero.IsZero())
	assert.Equal(t, "", zero.String())
}

func TestResumePositionTokenIsCompact(t *testing.T) {
	r := binlogstream.ResumePosition{Safe: pos("mysql-bin.000123", 98746801), Streamed: pos("mysql-bin.000123", 98779848)}
	assert.Less(t, len(r.String()), 50, r.String())
}

func TestParseResumePositionRejects(t *testing.T) {
	good := sampleResumePositions()[4].String()
	flip := []byte(good)
	flip[10] ^= 1
	cases := map[string]string{
		"foreign":     "mysql-bin.000001:4",
		"future":      "bls9.AAAA",
		"not base64":  "bls1.!!!!",
		"truncated":   good[:len(good)-3],
		"bit flipped": string(flip),
		"empty body":  "bls1.",
		"huge":        "bls1." + strings.Repeat("A", 5000),
	}
	for name, tok := range cases {
		_, err := binlogstream.ParseResumePosition(tok)
		require.Error(t, err, name)
		assert.True(t, errors.Is(err, binlogstream.ErrInvalidToken), name)
		var te *binlogstream.TokenError
		assert.True(t, errors.As(err, &te), name)
		assert.Contains(t, err.Error(), "binlogstream: invalid resume token", name)
	}
	var r binlogstream.ResumePosition
	assert.ErrorIs(t, json.Unmarshal([]byte(`"garbage"`), &r), binlogstream.ErrInvalidToken)
}

func FuzzParseResumePosition(f *testing.F) {
	for _, r := range sampleResumePositions() {
		f.Add(r.String())
		f.Add(binlogstream.WithSnapshotSample(r).String())
	}
	f.Add("bls1.")
	f.Add("bls1.AQA")
	f.Fuzz(func(t *testing.T, tok string) {
		r, err := binlogstream.ParseResumePosition(tok)
		if err != nil {
			if !errors.Is(err, binlogstream.ErrInvalidToken) {
				t.Fatalf("untyped error %v", err)
			}
			return
		}
		// Whatever parses re-encodes to a token that parses to the same value.
		again, err := binlogstream.ParseResumePosition(r.String())
		if err != nil || again != r {
			t.Fatalf("round trip of %q: %+v vs %+v (%v)", tok, r, again, err)
		}
	})
}

func TestAppendTextDoesNotAllocate(t *testing.T) {
	buf := make([]byte, 0, 256)
	for _, r := range sampleResumePositions() {
		got, err := r.AppendText(buf[:0])
		require.NoError(t, err)
		assert.Equal(t, r.String(), string(got))
		allocs := testing.AllocsPerRun(100, func() { _, _ = r.AppendText(buf[:0]) })
		assert.Zero(t, allocs, "%s", r)
	}
}

// TestTokenWriterMatchesAppendText: the tokens of every event and every
// row of every scenario, file and GTID mode, in binlog order and then
// shuffled, are AppendText's to the byte, through Append and through
// AppendAfterRows, each alone and the two in turns on one TokenWriter.
func TestTokenWriterMatchesAppendText(t *testing.T) {
	type afterRows struct {
		ev *binlogstream.Event
		n  int
	}
	var all []binlogstream.ResumePosition
	var rows []afterRows // all[i] is rows[i].ev.ResumeAfterRows(rows[i].n)
	for _, sc := range scenarios(false) {
		for _, gtid := range []bool{false, true} {
			if gtid && strings.Contains(sc.name, "anonymous") {
				continue // a server without GTIDs
			}
			start := sc.start()
			if gtid {
				var err error
				start, err = binlogstream.StartAtGTID(string(sc.bl.Flavor), "")
				require.NoError(t, err)
			}
			n := 0 // deliveries: every event in file mode, those of transactions in GTID mode
			for _, e := range sc.bl.Events {
				if !gtid || e.GTID != "" {
					n++
				}
			}
			s, err := binlogstream.NewBinlogStreamer(binlogstream.Config{Source: sc.source(), Start: start})
			require.NoError(t, err)
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			got := 0
			s.AddListener(func(_ context.Context, ev binlogstream.Event) error {
				for n := range binlogstream.RowChanges(ev.BinlogEvent) + 1 {
					all = append(all, ev.ResumeAfterRows(n))
					rows = append(rows, afterRows{&ev, n})
				}
				if got++; got == n {
					cancel()
				}
				return nil
			})
			require.ErrorIs(t, s.Run(ctx), context.Canceled, sc.name)
			cancel()
			require.NoError(t, s.Close())
		}
	}
	require.Greater(t, len(all), 500)
	// Tokens inside a rows event (AppendAfterRows' own paths), each mode.
	inside := map[bool]int{}
	for k, r := range rows {
		if r.n > 0 && r.n < binlogstream.RowChanges(r.ev.BinlogEvent) {
			inside[all[k].IsGTID()]++
		}
	}
	require.Greater(t, inside[false], 50, "file mode")
	require.Greater(t, inside[true], 50, "GTID mode")
	check := func(order []int, how func(i int) int) {
		var w binlogstream.TokenWriter
		var got []byte
		for i, k := range order {
			want, err := all[k].AppendText(nil)
			require.NoError(t, err)
			if how(i) == 0 {
				got = w.Append(got[:0], all[k])
			} else {
				got = w.AppendAfterRows(got[:0], rows[k].ev, rows[k].n)
			}
			require.Equal(t, string(want), string(got), "%s", all[k])
		}
	}
	inOrder := make([]int, len(all))
	for i := range inOrder {
		inOrder[i] = i
	}
	shuffled := slices.Clone(inOrder)
	rand.New(rand.NewPCG(1, 1)).Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
	rng := rand.New(rand.NewPCG(2, 2))
	for _, order := range [][]int{inOrder, shuffled} {
		check(order, func(int) int { return 0 })
		check(order, func(int) int { return 1 })
		check(order, func(i int) int { return i % 2 })
		check(order, func(int) int { return rng.IntN(2) })
	}
}

// TestTokenWriterGTIDSets: GTID-mode positions, MariaDB's short sets and
// long MySQL ones (a server after failovers: tokens of 0.2 to 4 KB), give
// AppendText's tokens through one TokenWriter, in order and shuffled, and
// the rows of one transaction cost no allocation once the writer has
// grown.
func TestTokenWriterGTIDSets(t *testing.T) {
	var all []binlogstream.ResumePosition
	// MariaDB's sets are short: payloads of 27 to 37 bytes, the sizes a
	// one-domain stream writes, some a few bytes under a size class of
	// Go's allocator.
	for seq := 4; seq < 1e6; seq = seq*10 + 4 {
		for n := range 301 {
			r, err := binlogstream.StartAtGTID("mariadb", fmt.Sprintf("0-1-%d", seq))
			require.NoError(t, err)
			if n > 0 {
				r.GTID = fmt.Sprintf("0-1-%d", seq+1)
				r.Progress = binlogstream.TxnProgress{TableMaps: 1, Rows: uint32(n), Fingerprint: uint64(n) * 0x9E3779B97F4A7C15}
			}
			all = append(all, r)
		}
	}
	for _, uuids := range []int{0, 1, 12, 100} {
		var set []string
		for i := range uuids {
			set = append(set, fmt.Sprintf("%08x-71ca-11e1-9e33-c80aa94295%02d:1-%d", 0x3e11fa47+i, i%100, 1000*(i+1)))
		}
		r, err := binlogstream.StartAtGTID("mysql", strings.Join(set, ","))
		require.NoError(t, err)
		all = append(all, r)
		r.GTID = "3e11fa47-71ca-11e1-9e33-c80aa9429500:99999"
		for n := range 300 {
			r.Progress = binlogstream.TxnProgress{TableMaps: 1, Rows: uint32(n), Statements: uint32(n / 100), Fingerprint: uint64(n) * 0x9E3779B97F4A7C15}
			all = append(all, r)
		}
	}
	// A fresh writer, once grown, on the rows of one transaction (tokens
	// of one size), for each set length.
	for from := 1; from < len(all); from += 301 {
		var w binlogstream.TokenWriter
		var got []byte
		k := 0
		rows := all[from : from+3]
		got = w.Append(got[:0], rows[2])
		assert.Zero(t, testing.AllocsPerRun(100, func() { got = w.Append(got[:0], rows[k%3]); k++ }), "%s", rows[0])
	}
	requireTokenWriterText(t, all, 3)
}

// requireTokenWriterText requires one TokenWriter to write each token of
// all as AppendText does, in their order and then shuffled (seed).
func requireTokenWriterText(t *testing.T, all []binlogstream.ResumePosition, seed uint64) {
	t.Helper()
	check := func(order []binlogstream.ResumePosition) {
		var w binlogstream.TokenWriter
		var got []byte
		for _, r := range order {
			want, err := r.AppendText(nil)
			require.NoError(t, err)
			got = w.Append(got[:0], r)
			require.Equal(t, string(want), string(got), "%s", r)
		}
	}
	check(all)
	shuffled := slices.Clone(all)
	rand.New(rand.NewPCG(seed, seed)).Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
	check(shuffled)
}
