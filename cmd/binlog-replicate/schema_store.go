package main

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/go-mysql-org/go-mysql/client"

	"github.com/binlogstream/binlogstream"
	"github.com/binlogstream/binlogstream/internal/sqlconn"
)

// schemaStore keeps the streamer's schema history (binlogstream.SchemaStore)
// in the target, next to the checkpoint, so a restart does not take a new
// information_schema snapshot and read the binlog up to it again. It has
// its own connection in autocommit: a record is durable before Append
// returns, whatever the apply connection's open transaction becomes.
type schemaStore struct {
	conn  *client.Conn
	table string
	name  string
}

func openSchemaStore(ctx context.Context, dsn binlogstream.DSN, tgt *target) (*schemaStore, error) {
	c, err := connect(ctx, dsn, false)
	if err != nil {
		return nil, fmt.Errorf("target: %w", err)
	}
	return &schemaStore{conn: c, table: tgt.stateTable("schema_history"), name: tgt.name}, nil
}

func (s *schemaStore) close() { _ = sqlconn.Close(s.conn) }

// Load returns the records appended so far, in order.
func (s *schemaStore) Load() ([]binlogstream.SchemaRecord, error) {
	r, err := s.conn.Execute("SELECT record FROM "+s.table+" WHERE name = ? ORDER BY seq", s.name)
	if err != nil {
		return nil, err
	}
	recs := make([]binlogstream.SchemaRecord, r.RowNumber())
	for i := range recs {
		js, _ := r.GetString(i, 0)
		if err := json.Unmarshal([]byte(js), &recs[i]); err != nil {
			return nil, fmt.Errorf("record %d of %s: %w", i, s.table, err)
		}
	}
	return recs, nil
}

// Append stores rec (one autocommitted INSERT).
func (s *schemaStore) Append(rec binlogstream.SchemaRecord) error {
	js, err := json.Marshal(rec)
	if err != nil {
		return err
	}
	_, err = s.conn.Execute("INSERT INTO "+s.table+" (name, record) VALUES (?, ?)", s.name, string(js))
	return err
}
