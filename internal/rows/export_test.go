package rows

import "github.com/go-mysql-org/go-mysql/replication"

// DecoderForTest decodes rows in place as the sources' read-ahead decoder
// does with no worker: Decode is its go-mysql RowsEventDecodeFunc, Fast
// counts the events this package's decoder decoded (the others went to
// go-mysql's).
type DecoderForTest struct {
	plans PlanCache
	fast  int
}

func (d *DecoderForTest) Decode(re *replication.RowsEvent, data []byte) error {
	pos, err := Header(re, data)
	if err != nil {
		return err
	}
	j := d.plans.Job(re, pos, data)
	fast, err := j.Run(false)
	if fast {
		d.fast++
	}
	return err
}

func (d *DecoderForTest) Fast() int { return d.fast }

// FastRowsSettings reports whether the fast decoder applies to re's
// parser settings.
func FastRowsSettings(re *replication.RowsEvent) bool {
	_, ok := fastSettings(re)
	return ok
}
