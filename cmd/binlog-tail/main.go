package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	adviseHugeHeapAtStart()
	tuneGC(os.Getenv)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := cli(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
