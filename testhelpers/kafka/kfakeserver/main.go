// Command kfakeserver runs franz-go's kfake, an in-memory Kafka cluster
// that implements transactions and read_committed, in a process of its
// own: testhelpers/kafka builds and starts it, so that a test can
// SIGKILL a publisher without taking the broker with it. It prints
// "brokers HOST:PORT,..." on stdout once it listens, and runs until
// SIGTERM or SIGINT or until its stdin closes (the test that started it
// is gone).
package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/twmb/franz-go/pkg/kfake"
)

func main() {
	brokers := flag.Int("brokers", 1, "brokers in the cluster")
	partitions := flag.Int("partitions", 4, "partitions of a topic created with the broker's default")
	flag.Parse()
	c, err := kfake.NewCluster(kfake.NumBrokers(*brokers), kfake.DefaultNumPartitions(*partitions))
	if err != nil {
		fmt.Fprintln(os.Stderr, "kfakeserver:", err)
		os.Exit(1)
	}
	defer c.Close()
	fmt.Printf("brokers %s\n", strings.Join(c.ListenAddrs(), ","))
	done := make(chan struct{})
	go func() {
		_, _ = io.Copy(io.Discard, os.Stdin)
		close(done)
	}()
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
	select {
	case <-sig:
	case <-done:
	}
}
