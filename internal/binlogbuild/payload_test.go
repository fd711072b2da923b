package binlogbuild_test

import (
	"context"
	"encoding/binary"
	"fmt"
	"testing"
	"time"

	"github.com/go-mysql-org/go-mysql/mysql"
	"github.com/go-mysql-org/go-mysql/replication"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/binlogstream/binlogstream/internal/binlogbuild"
)

func compressedScript(b *binlogbuild.Builder) {
	b.DDL("app", "CREATE TABLE users (id INT, name VARCHAR(64), score BIGINT)")
	b.Txn(func(t *binlogbuild.Txn) { t.Insert(users, u(1, "ann", 10), u(2, nil, -5)) })
	b.EmptyTxn()
	b.Txn(func(t *binlogbuild.Txn) {
		var rows []binlogbuild.Row
		for i := int32(0); i < 300; i++ { // a payload past 251 bytes
			rows = append(rows, u(i, fmt.Sprintf("user %d", i), int64(i)))
		}
		t.Insert(users, rows...)
		t.Update(users, u(1, "ann", 10), u(1, "ann", 11))
	})
	b.RolledBack(func(t *binlogbuild.Txn) { t.Insert(orders, binlogbuild.Row{int64(3), "gone"}) })
	b.Rotate()
	b.Txn(func(t *binlogbuild.Txn) { t.Delete(users, u(2, nil, -5)) })
}

// decodeAll parses every file of bl with go-mysql's parser, checksums
// verified, and checks each event against the index.
func decodeAll(t *testing.T, bl *binlogbuild.Binlog) []*replication.BinlogEvent {
	t.Helper()
	var out []*replication.BinlogEvent
	i := 0
	for _, f := range bl.Files {
		p := replication.NewBinlogParser()
		p.SetVerifyChecksum(true)
		for off := uint32(4); off < uint32(len(f.Data)); {
			size := binary.LittleEndian.Uint32(f.Data[off+9:])
			ev, err := p.Parse(f.Data[off : off+size])
			require.NoError(t, err, "event at %s:%d", f.Name, off)
			e := bl.Events[i]
			require.Equal(t, e.Start, off, "%s", e)
			require.Equal(t, e.Type, ev.Header.EventType, "%s", e)
			if ev.Header.LogPos != 0 {
				require.Equal(t, e.End, ev.Header.LogPos, "%s", e)
			}
			out = append(out, ev)
			off += size
			i++
		}
	}
	require.Equal(t, len(bl.Events), i)
	return out
}

// rowImages flattens the rows of every rows event, inside payloads too.
func rowImages(evs []*replication.BinlogEvent) (rows [][]any, types []replication.EventType) {
	for _, ev := range evs {
		inner := []*replication.BinlogEvent{ev}
		if p, ok := ev.Event.(*replication.TransactionPayloadEvent); ok {
			inner = p.Events
		}
		for _, e := range inner {
			if e.Header.EventType == replication.TRANSACTION_PAYLOAD_EVENT {
				continue
			}
			types = append(types, e.Header.EventType)
			if r, ok := e.Event.(*replication.RowsEvent); ok {
				rows = append(rows, r.Rows...)
			}
		}
	}
	return rows, types
}

func TestCompressTransactions(t *testing.T) {
	for _, opts := range [][]binlogbuild.Option{nil, {binlogbuild.MaxRowsPerEvent(7)}, {binlogbuild.Checksum(false)}, {binlogbuild.ZeroLogPos()}, {binlogbuild.AnonymousGTID(), binlogbuild.RowsQuery()}} {
		plainB := binlogbuild.NewBuilder(binlogbuild.MySQL, opts...)
		compressedScript(plainB)
		plain := plainB.Build()
		bl, err := binlogbuild.CompressTransactions(plain)
		require.NoError(t, err)

		evs := decodeAll(t, bl)
		payloads := 0
		for i, ev := range evs {
			p, ok := ev.Event.(*replication.TransactionPayloadEvent)
			if !ok {
				continue
			}
			payloads++
			assert.EqualValues(t, replication.ZSTD, p.CompressionType)
			require.NotEmpty(t, p.Events)
			q, ok := p.Events[0].Event.(*replication.QueryEvent)
			require.True(t, ok)
			assert.Equal(t, "BEGIN", string(q.Query))
			_, ok = p.Events[len(p.Events)-1].Event.(*replication.XIDEvent)
			assert.True(t, ok, "the payload ends with the Xid")
			// go-mysql stamps the inner positions from the payload's header.
			if ev.Header.LogPos != 0 {
				assert.Equal(t, ev.Header.LogPos, p.Events[len(p.Events)-1].Header.LogPos)
			}
			// The GTID event's transaction length covers GTID + payload.
			g := evs[i-1].Event.(*replication.GTIDEvent)
			assert.EqualValues(t, bl.Events[i].End-bl.Events[i-1].Start, g.TransactionLength)
			if p.Size < 251 {
				assert.EqualValues(t, len(p.Payload), p.Size)
			}
		}
		assert.Equal(t, 3, payloads, "the three committed row transactions are compressed")

		wantRows, wantTypes := rowImages(decodeAll(t, plain))
		gotRows, gotTypes := rowImages(evs)
		assert.Equal(t, wantRows, gotRows)
		assert.Equal(t, wantTypes, gotTypes)
	}
}

func TestCompressTransactionsExtends(t *testing.T) {
	b := binlogbuild.NewBuilder(binlogbuild.MySQL)
	b.Txn(func(t *binlogbuild.Txn) { t.Insert(users, u(1, "a", 1)) })
	first, err := binlogbuild.CompressTransactions(b.Build())
	require.NoError(t, err)
	b.Txn(func(t *binlogbuild.Txn) { t.Insert(users, u(2, "b", 2)) })
	second, err := binlogbuild.CompressTransactions(b.Build())
	require.NoError(t, err)

	src := binlogbuild.NewFakeSource(first)
	require.NoError(t, src.Append(second), "successive compressed builds extend each other")
	st, err := src.OpenFile(context.Background(), mysql.Position{Name: first.Files[0].Name, Pos: 4})
	require.NoError(t, err)
	defer st.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	var n int
	for n < 2 {
		ev, err := st.Next(ctx)
		require.NoError(t, err)
		if _, ok := ev.Event.(*replication.TransactionPayloadEvent); ok {
			n++
		}
	}
}

func TestCompressTransactionsMariaDB(t *testing.T) {
	_, err := binlogbuild.CompressTransactions(binlogbuild.Seed001(binlogbuild.MariaDB))
	assert.Error(t, err)
}
