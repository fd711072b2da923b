// Command binlog-publish streams the binlog of a MySQL or MariaDB server
// into a NATS JetStream stream, exactly once: one message per line
// binlog-tail would write, the stream being the checkpoint. See README.md.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := cli(ctx, os.Args[1:], os.Stderr)
	stop()
	os.Exit(code)
}
