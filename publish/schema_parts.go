package publish

import (
	"encoding/json"

	"github.com/binlogstream/binlogstream"
)

// SchemaPart is one stored part of a schema history record: the JetStream
// store (SchemaStore) and the Kafka one cut records the same way, so that
// a record larger than a message is stored in order and read back whole
// and once (AssembleSchemaRecords).
type SchemaPart struct {
	// ID is the record's (a hash of its JSON); I is the part's number,
	// from 1, of N.
	ID   string
	I, N int
	Data []byte
}

// SchemaPartBytes is the largest part's Data.
const SchemaPartBytes = partBytes

// SplitSchemaRecord cuts rec's JSON into parts of SchemaPartBytes.
func SplitSchemaRecord(rec binlogstream.SchemaRecord) ([]SchemaPart, error) {
	data, err := json.Marshal(rec)
	if err != nil {
		return nil, err
	}
	var out []SchemaPart
	for _, p := range splitRecord(data, partBytes) {
		out = append(out, SchemaPart{ID: p.id, I: p.i, N: p.n, Data: p.data})
	}
	return out, nil
}

// AssembleSchemaRecords joins parts, as stored, into the records whose
// parts are all there, each once, in the order they were completed.
func AssembleSchemaRecords(parts []SchemaPart) ([]binlogstream.SchemaRecord, error) {
	in := make([]schemaPart, len(parts))
	for i, p := range parts {
		in[i] = schemaPart{id: p.ID, i: p.I, n: p.N, data: p.Data}
	}
	return assemble(in)
}
