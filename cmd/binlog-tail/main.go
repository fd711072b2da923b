package main

import (
	"context"
	"os"
	"os/signal"
	"runtime/debug"
	"syscall"
)

// gcPercent replaces Go's default GOGC of 100 unless GOGC is set: most
// of the heap is short-lived (decoded rows, tokens) and the live part is
// small (bounded queues of events), so collecting half as often costs
// little memory and takes a large part of GC marking and assists out of
// the CPU profile (BenchmarkRealMariaDB with GOGC=100 against 200).
const gcPercent = 200

func main() {
	adviseHugeHeapAtStart()
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(gcPercent)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := cli(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
