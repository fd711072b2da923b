package publish

import (
	"context"
	"encoding/json"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/binlogstream/binlogstream"
	natstest "github.com/binlogstream/binlogstream/testhelpers/nats"
)

// ddlRecord is a DDL record whose statement is n bytes long.
func ddlRecord(i, n int) binlogstream.SchemaRecord {
	return binlogstream.SchemaRecord{End: binlogstream.Position{File: "mysql-bin.000001", Offset: uint64(1000 + i)}, Database: "d",
		Statement: "ALTER TABLE t" + strconv.Itoa(i) + " COMMENT '" + strings.Repeat("x", n) + "'"}
}

// Records cut into parts, the parts stored with repeats (a retried
// Append) and with records cut short (a crash in an Append), always join
// back into the complete records, each once, in the order completed.
func TestSchemaPartsAssemble(t *testing.T) {
	for seed := range 200 {
		rng := rand.New(rand.NewPCG(uint64(seed), 7))
		var parts []schemaPart
		var want []binlogstream.SchemaRecord
		const size = 256 // small parts: the same cuts as partBytes, faster
		for i := range 1 + rng.IntN(6) {
			rec := ddlRecord(i, rng.IntN(3*size))
			data, err := json.Marshal(rec)
			require.NoError(t, err)
			ps := splitRecord(data, size)
			if rng.IntN(4) == 0 && len(ps) > 1 { // a crash: the first parts only, then the whole Append again
				parts = append(parts, ps[:1+rng.IntN(len(ps)-1)]...)
			}
			for _, p := range ps {
				parts = append(parts, p)
				if rng.IntN(5) == 0 {
					parts = append(parts, p) // an ack lost: the part stored twice
				}
			}
			if rng.IntN(6) == 0 {
				parts = append(parts, ps...) // the same record appended again later
			}
			want = append(want, rec)
		}
		if rng.IntN(3) == 0 { // a record cut by the last crash: never complete
			data, _ := json.Marshal(ddlRecord(99, 2*size))
			parts = append(parts, splitRecord(data, size)[0])
		}
		got, err := assemble(parts)
		require.NoError(t, err, "seed %d", seed)
		require.Equal(t, want, got, "seed %d", seed)
	}
	// Negative control: joining parts as they come, without ids and part
	// numbers, breaks on a repeated part.
	data, _ := json.Marshal(ddlRecord(1, 2*partBytes))
	ps := splitRecord(data, partBytes)
	var naive []byte
	for _, p := range []schemaPart{ps[0], ps[0], ps[1], ps[2]} {
		naive = append(naive, p.data...)
	}
	var rec binlogstream.SchemaRecord
	assert.Error(t, json.Unmarshal(naive, &rec))

	_, err := parsePart(nats.Header{SchemaPartHeader: []string{"3/2"}, SchemaRecordHeader: []string{"ab"}}, nil)
	assert.ErrorContains(t, err, "not a schema history part")
}

// TestSchemaStoreOnCluster: records, one over a message's size, appended
// to an R3 stream read back equal, from a second connection too; a record
// cut short and a record appended twice leave the history as it was.
func TestSchemaStoreOnCluster(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a 3-node NATS cluster")
	}
	c := natstest.StartCluster(t, 3)
	conn := func() jetstream.JetStream {
		nc, err := nats.Connect(c.URLs())
		require.NoError(t, err)
		t.Cleanup(nc.Close)
		js, err := jetstream.New(nc)
		require.NoError(t, err)
		return js
	}
	ctx := context.Background()
	js := conn()
	s, err := OpenSchemaStore(ctx, js, "S", "binlog", 0, 0)
	require.NoError(t, err)
	recs, err := s.Load()
	require.NoError(t, err)
	require.Empty(t, recs)
	info, err := js.Stream(ctx, SchemaStreamName("S"))
	require.NoError(t, err)
	assert.Equal(t, 3, info.CachedInfo().Config.Replicas)

	want := []binlogstream.SchemaRecord{ddlRecord(1, 10), ddlRecord(2, 3*partBytes/2), ddlRecord(3, 10)}
	require.NoError(t, s.Append(want[0]))
	require.NoError(t, s.Append(want[1]))
	// A crash inside an Append of a two-part record: its first part only.
	cut, _ := json.Marshal(ddlRecord(9, 3*partBytes/2))
	p := splitRecord(cut, partBytes)[0]
	msg := nats.NewMsg(s.subject)
	msg.Data = p.data
	msg.Header.Set(SchemaRecordHeader, p.id)
	msg.Header.Set(SchemaPartHeader, "1/2")
	_, err = js.PublishMsg(ctx, msg)
	require.NoError(t, err)
	require.NoError(t, s.Append(want[2]))
	require.NoError(t, s.Append(want[1])) // again: nothing new

	// Another prefix of the same stream has a history of its own.
	other, err := OpenSchemaStore(ctx, conn(), "S", "other", 0, 0)
	require.NoError(t, err)
	require.NoError(t, other.Append(ddlRecord(7, 10)))

	again, err := OpenSchemaStore(ctx, conn(), "S", "binlog", 0, 0)
	require.NoError(t, err)
	got, err := again.Load()
	require.NoError(t, err)
	assert.Equal(t, want, got)
	got, err = other.Load()
	require.NoError(t, err)
	assert.Equal(t, []binlogstream.SchemaRecord{ddlRecord(7, 10)}, got)
}
