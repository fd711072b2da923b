package main

import (
	"context"
	"os"

	"github.com/binlogstream/binlogstream/cmd/internal/clikit"
)

func main() {
	clikit.Main(func(ctx context.Context) int { return cli(ctx, os.Args[1:], os.Stderr) })
}
