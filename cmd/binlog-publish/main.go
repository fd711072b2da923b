// Command binlog-publish streams the binlog of a MySQL or MariaDB server
// into a NATS JetStream stream, exactly once: one message per line
// binlog-tail would write, the stream being the checkpoint. See README.md.
package main

import (
	"context"
	"os"

	"github.com/binlogstream/binlogstream/cmd/internal/clikit"
)

func main() {
	clikit.Main(func(ctx context.Context) int { return cli(ctx, os.Args[1:], os.Stderr) })
}
