// Package clikit holds what the commands share around their streaming:
// the process's start and end, the logger, and the server queries that
// resolve a start position. It imports the root package and go-mysql's
// client.
package clikit

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/go-mysql-org/go-mysql/client"
	"github.com/go-mysql-org/go-mysql/mysql"
	"github.com/sirupsen/logrus"

	"github.com/binlogstream/binlogstream"
)

// Main runs cli with a context that SIGINT and SIGTERM cancel, and exits
// with the code it returns.
func Main(cli func(ctx context.Context) int) {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := cli(ctx)
	stop()
	os.Exit(code)
}

// NewLogger is a command's logger: warnings and errors to w, without
// timestamps; nothing when quiet.
func NewLogger(w io.Writer, quiet bool) *logrus.Logger {
	logger := logrus.New()
	logger.SetOutput(w)
	logger.SetLevel(logrus.WarnLevel)
	logger.SetFormatter(&logrus.TextFormatter{DisableTimestamp: true})
	if quiet {
		logger.SetOutput(io.Discard)
	}
	return logger
}

// OldestBinlog is the start of the server's oldest binlog file (the first
// of SHOW BINARY LOGS).
func OldestBinlog(c *client.Conn) (binlogstream.Position, error) {
	r, err := c.Execute("SHOW BINARY LOGS")
	if err != nil {
		return binlogstream.Position{}, fmt.Errorf("SHOW BINARY LOGS: %w", err)
	}
	if r.RowNumber() == 0 {
		return binlogstream.Position{}, errors.New("SHOW BINARY LOGS is empty: is binary logging on (log_bin)?")
	}
	name, err := r.GetString(0, 0)
	if err != nil {
		return binlogstream.Position{}, fmt.Errorf("SHOW BINARY LOGS: %w", err)
	}
	return binlogstream.Position{File: strings.Clone(name), Offset: 4}, nil // GetString aliases a pooled buffer
}

// Fail reports err on stderr as one line, "name: message", and returns
// code, the exit status. Messages never hold a password: DSNs render as
// USER:xxxxx@...
func Fail(stderr io.Writer, name string, err error, code int) int {
	fmt.Fprintf(stderr, "%s: %s\n", name, strings.Join(strings.Fields(err.Error()), " "))
	return code
}

// Unserved is err's server refusal to send the binlog from where the
// stream stands (ER_MASTER_FATAL_ERROR_READING_BINLOG: purged or missing
// binlogs), to which a command adds what to do; nil for other errors.
func Unserved(err error) *binlogstream.ServerError {
	var se *binlogstream.ServerError
	if errors.As(err, &se) && se.Err.Code == mysql.ER_MASTER_FATAL_ERROR_READING_BINLOG {
		return se
	}
	return nil
}
