package debezium

import (
	"encoding/json"
	"fmt"
)

// Restorer rebuilds an Encoder's State from the values of the records it
// wrote, read newest first: the transaction in flight from the change
// events back to its first one, and whether a snapshot read was written.
// A consumer that resumes a stream from the last record it kept (its
// resume token) gives the Encoder this State, so that the records after
// it number their transaction as an uninterrupted run does.
type Restorer struct {
	st State
	// txnDone: the transaction's first record (or a record outside it) was
	// seen; wantSnapshot: whether the scan goes on for a snapshot read.
	txnDone, wantSnapshot bool
	found                 bool
}

// NewRestorer returns a Restorer; wantSnapshot makes it look for a
// snapshot read too (needed while a snapshot is in progress: the next
// read is marked "first" only if none was written).
func NewRestorer(wantSnapshot bool) *Restorer {
	return &Restorer{wantSnapshot: wantSnapshot}
}

// Done reports whether the records seen so far settle the State.
func (r *Restorer) Done() bool { return r.txnDone && (!r.wantSnapshot || r.st.SnapshotBegun) }

// State is the rebuilt State.
func (r *Restorer) State() State { return r.st }

// recordInfo is what a change event's value says of its place.
type recordInfo struct {
	Payload *recordInfo `json:"payload"`
	Op      string      `json:"op"`
	DDL     *string     `json:"ddl"`
	Source  *struct {
		DB     string `json:"db"`
		Table  string `json:"table"`
		Thread *int64 `json:"thread"`
	} `json:"source"`
	Transaction *struct {
		ID    string `json:"id"`
		Total int64  `json:"total_order"`
		DC    int64  `json:"data_collection_order"`
	} `json:"transaction"`
}

// Add takes the value of the next older record (nil for a tombstone).
func (r *Restorer) Add(value []byte) error {
	if value == nil || r.Done() {
		return nil
	}
	var v recordInfo
	if err := json.Unmarshal(value, &v); err != nil {
		return fmt.Errorf("debezium: a record's value: %w", err)
	}
	if v.Payload != nil { // written with schemas
		v = *v.Payload
	}
	switch {
	case v.Op == "r":
		r.st.SnapshotBegun = true
		return nil
	case v.DDL != nil:
		r.txnDone = true // a DDL statement ends any transaction before it
		return nil
	case r.txnDone || v.Transaction == nil || v.Source == nil:
		return nil
	}
	tx := v.Transaction
	if !r.found {
		r.found = true
		r.st.Txn = Txn{ID: tx.ID, Total: tx.Total, Tables: map[string]int64{}, Thread: -1}
		if v.Source.Thread != nil {
			r.st.Txn.Thread = *v.Source.Thread
		}
	} else if tx.ID != r.st.Txn.ID {
		r.txnDone = true
		return nil
	}
	key := v.Source.DB + "." + v.Source.Table
	if _, ok := r.st.Txn.Tables[key]; !ok {
		r.st.Txn.Tables[key] = tx.DC
	}
	if tx.Total <= 1 {
		r.txnDone = true
	}
	return nil
}

// AtStart settles the State once the first record was read: nothing
// older exists.
func (r *Restorer) AtStart() { r.txnDone, r.wantSnapshot = true, false }
