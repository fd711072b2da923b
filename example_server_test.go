package binlogstream_test

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/binlogstream/binlogstream"
)

// A program streams a real server's row changes and keeps its token in a
// file. Its first run crashes between two rows of one event; the second
// resumes from the file and stops at the server's current position: every
// row arrives once. The DSN comes from BINLOGSTREAM_DSN
// (USER:PASSWORD@tcp(HOST:PORT)/, an account with REPLICATION SLAVE and
// BINLOG MONITOR, or REPLICATION CLIENT on MySQL) and the token file goes
// in the directory BINLOGSTREAM_STATE_DIR.
//
// It needs a server, so it has no Output comment: TestExampleServer runs it
// against a throwaway MariaDB server whose binlog holds the two INSERTs of
// the comment at its end, and checks that it prints what that comment says.
func Example_server() {
	dsn, err := binlogstream.ParseDSN(os.Getenv("BINLOGSTREAM_DSN"))
	if err != nil {
		fmt.Println("error:", err)
		return
	}
	tokenFile := filepath.Join(os.Getenv("BINLOGSTREAM_STATE_DIR"), "binlog.token")

	err = follow(context.Background(), dsn, tokenFile, 2) // crashes after 2 rows
	fmt.Println("first run crashed:", errors.Is(err, errCrashed))
	err = follow(context.Background(), dsn, tokenFile, 0) // runs up to the server's current position
	fmt.Println("second run:", err)

	// With INSERT INTO shop.orders VALUES (1, 'apple'), (2, 'pear'), (3, 'plum')
	// and INSERT INTO shop.orders VALUES (4, 'fig'), (5, 'kiwi') in the
	// binlog, it prints:
	//
	// insert [1 apple]
	// insert [2 pear]
	// first run crashed: true
	// insert [3 plum]
	// insert [4 fig]
	// insert [5 kiwi]
	// second run: <nil>
}

var errCrashed = errors.New("crashed")

// follow streams from the token in tokenFile (from the server's oldest
// binlog file when there is none) to the server's current position,
// printing each row change and storing beside it the token that Changes
// gives for it. It returns errCrashed after crashAfter rows (0: never).
func follow(ctx context.Context, dsn binlogstream.DSN, tokenFile string, crashAfter int) error {
	// The flavor (MySQL or MariaDB) is read from the server.
	src, err := binlogstream.NewSyncerSource(binlogstream.SyncerConfig{DSN: dsn, ServerID: 4242})
	if err != nil {
		return err
	}
	var start binlogstream.ResumePosition
	token, err := os.ReadFile(tokenFile)
	switch {
	case err == nil:
		if start, err = binlogstream.ParseResumePosition(string(token)); err != nil {
			return err
		}
	case errors.Is(err, fs.ErrNotExist):
		// binlogstream.StartAtCurrent(ctx, src) would start at the end instead.
		files, err := src.BinaryLogs(ctx)
		if err != nil {
			return err
		}
		start = binlogstream.StartAt(binlogstream.Position{File: files[0], Offset: 4})
	default:
		return err
	}

	s, err := binlogstream.NewBinlogStreamer(binlogstream.Config{Source: src, Start: start})
	if err != nil {
		return err
	}
	defer s.Close()
	applied := 0
	s.AddListener(func(_ context.Context, ev binlogstream.Event) error {
		for change, resume := range ev.Changes() {
			// Apply the change, then store its token. A sink that can
			// commits both in one transaction; here the token file is
			// replaced whole, so it holds one token or the other.
			fmt.Println(binlogstream.RowKind(ev.Header.EventType), change[len(change)-1])
			if err := replaceFile(tokenFile, resume.String()); err != nil {
				return err
			}
			if applied++; applied == crashAfter {
				return errCrashed
			}
		}
		return nil
	})
	if _, err := s.StopAtCurrent(ctx); err != nil {
		return err
	}
	return s.Run(ctx)
}

// replaceFile writes data to path through a rename, so that a crash leaves
// the old content or the new one. A program that must survive a power
// loss also syncs the file and its directory.
func replaceFile(path, data string) error {
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(data), 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}
