package binlogstream_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/go-mysql-org/go-mysql/replication"

	"github.com/binlogstream/binlogstream"
	th "github.com/binlogstream/binlogstream/testhelpers"
)

// With ProgressInterval, a consumer that persists its token only with the
// rows it applies still hears of the position when nothing it wants
// comes: here the stream goes idle after one transaction, and a Progress
// arrives on the heartbeats, flagged Idle, carrying the last token, the
// moment to flush whatever the consumer batched.
func Example_progress() {
	bl := th.NewBuilder(th.MySQL).Txn(func(t *th.Txn) { t.Insert(users, userRows(1, 2)...) }).Build()
	src := th.NewFakeSource(bl, th.HeartbeatWhenIdle(time.Millisecond))
	s, err := binlogstream.NewBinlogStreamer(binlogstream.Config{
		Source:           src,
		Start:            binlogstream.StartAt(binlogstream.Position{File: "mysql-bin.000001", Offset: 4}),
		ProgressInterval: 5 * time.Millisecond,
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer s.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var last binlogstream.ResumePosition
	s.AddListener(func(_ context.Context, ev binlogstream.Event) error {
		switch e := ev.Event.(type) {
		case *replication.RowsEvent:
			fmt.Println("apply", len(e.Rows), "rows")
		case *binlogstream.Progress:
			fmt.Println("progress: idle", e.Idle, "same token", ev.Resume == last)
			cancel()
		}
		last = ev.Resume
		return nil
	})
	if err := s.Run(ctx); err != nil && !errors.Is(err, context.Canceled) {
		fmt.Println(err)
	}
	// Output:
	// apply 2 rows
	// progress: idle true same token true
}
