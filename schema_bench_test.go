package binlogstream_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/binlogstream/binlogstream"
	th "github.com/binlogstream/binlogstream/testhelpers"
)

// BenchmarkSchemaPerEvent measures what following the schema costs per
// event and per row: the same stream with Event.Table filled and with
// schema tracking off, for FULL metadata (the Table_map's names) and
// NO_LOG (the history from the stream's CREATE), one-row and 20-row
// statements, 3 statements a transaction.
func BenchmarkSchemaPerEvent(b *testing.B) {
	for _, meta := range []th.RowMetadata{th.MetadataFull, th.MetadataNoLog} {
		for _, rows := range []int{1, 20} {
			bl := schemaBenchBinlog(meta, 2000, 3, rows)
			evs := decodedEvents(b, bl)
			start := binlogstream.StartAt(binlogstream.Position{File: bl.Files[0].Name, Offset: 4})
			name := map[th.RowMetadata]string{th.MetadataFull: "full", th.MetadataNoLog: "nolog"}[meta]
			for _, schema := range []bool{true, false} {
				b.Run(fmt.Sprintf("%s/rows=%d/schema=%v", name, rows, schema), func(b *testing.B) {
					delivered, changes, known := 0, 0, 0
					b.ReportAllocs()
					for b.Loop() {
						s, err := binlogstream.NewBinlogStreamer(binlogstream.Config{Source: memSource(evs), Start: start})
						if err != nil {
							b.Fatal(err)
						}
						if !schema {
							binlogstream.DisableSchema(s)
						}
						s.AddListener(func(_ context.Context, ev binlogstream.Event) error {
							if n := binlogstream.RowChanges(ev.BinlogEvent); n > 0 {
								changes += n
								if ev.Table.Known() {
									known += n
								}
							}
							return nil
						})
						if err := s.Run(context.Background()); !errors.Is(err, errMemSourceEnd) {
							b.Fatal(err)
						}
						delivered += int(s.Stats().Delivered)
					}
					if schema && known != changes {
						b.Fatalf("%d of %d row changes without a known table", changes-known, changes)
					}
					b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(delivered), "ns/event")
					b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(changes), "ns/row")
				})
			}
		}
	}
}

func schemaBenchBinlog(meta th.RowMetadata, txns, stmts, rowsPerEvent int) *th.Binlog {
	b := th.NewBuilder(th.MySQL, th.MaxRowsPerEvent(rowsPerEvent))
	b.DDL("app", "CREATE TABLE orders (id BIGINT PRIMARY KEY, user_id INT, note VARCHAR(300))")
	tbl := orders
	tbl.Metadata = meta
	id := 0
	for i := 0; i < txns; i++ {
		b.Txn(func(t *th.Txn) {
			for j := 0; j < stmts; j++ {
				t.Insert(tbl, orderRows(id, rowsPerEvent)...)
				id += rowsPerEvent
			}
		})
	}
	return b.Build()
}
