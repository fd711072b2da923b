// Package nats runs NATS JetStream clusters for tests: nats-server built
// from the github.com/nats-io/nats-server/v2 module this module requires
// (a tool in go.mod), so a test needs only the Go toolchain and the module
// proxy. Each node is its own process on loopback ports with its own
// store directory, killable with SIGKILL and restartable on that store.
package nats

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	th "github.com/binlogstream/binlogstream/testhelpers"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

var build th.ModuleBinary

// Binary is the path of nats-server, built once per test process from
// the module's tool requirement (the build cache makes a later build a
// link).
func Binary(t testing.TB) string {
	t.Helper()
	return build.Path(t, "github.com/nats-io/nats-server/v2", "nats-server")
}

// Node is one nats-server process of a Cluster.
type Node struct {
	Name        string
	Port        int // client port
	clusterPort int
	storeDir    string
	c           *Cluster

	mu   sync.Mutex
	cmd  *exec.Cmd
	done chan struct{} // closed once cmd's process is reaped
	log  *lockedBuffer
}

// lockedBuffer is a process's output, read while it is written.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// Cluster is a JetStream cluster of nodes on loopback.
type Cluster struct {
	Nodes []*Node
	bin   string
	dir   string
	name  string
	conf  string // a configuration file every node reads, when set
}

// StartCluster starts n clustered JetStream nodes and waits until they
// have elected a JetStream meta leader. They are killed at t's end.
func StartCluster(t testing.TB, n int) *Cluster {
	t.Helper()
	return StartClusterMaxPayload(t, n, 0)
}

// StartClusterMaxPayload is StartCluster with the servers' max_payload
// set to maxPayload bytes (the server's default, 1 MiB, when 0).
func StartClusterMaxPayload(t testing.TB, n int, maxPayload int) *Cluster {
	t.Helper()
	c := &Cluster{bin: Binary(t), dir: t.TempDir(), name: "C"}
	if maxPayload > 0 {
		c.conf = filepath.Join(c.dir, "server.conf")
		if err := os.WriteFile(c.conf, []byte(fmt.Sprintf("max_payload: %d\n", maxPayload)), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() {
		for _, nd := range c.Nodes {
			nd.Kill()
		}
	})
	// A port found free can be taken before a node binds it (another
	// test's server, a connection's local port): the nodes then start
	// again on other ports, in fresh store directories.
	for attempt := 1; ; attempt++ {
		c.Nodes = nil
		for i := range n {
			name := "n" + strconv.Itoa(i+1)
			c.Nodes = append(c.Nodes, &Node{Name: name, Port: pickPort(t), clusterPort: pickPort(t),
				storeDir: filepath.Join(c.dir, strconv.Itoa(attempt), name), c: c})
		}
		err := c.startNodes()
		if err == nil {
			break
		}
		for _, nd := range c.Nodes {
			nd.Kill()
		}
		if attempt == portAttempts {
			t.Fatal(err)
		}
		t.Logf("nats: %v; starting the cluster again on other ports", err)
	}
	c.WaitReady(t)
	return c
}

// pickPort is the port a node listens on: freePort (a test replaces it).
var pickPort = freePort

// portAttempts bounds the starts of a cluster whose ports were taken.
const portAttempts = 3

func (c *Cluster) startNodes() error {
	for _, nd := range c.Nodes {
		if err := nd.start(); err != nil {
			return err
		}
	}
	return nil
}

func freePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// URLs is the client URLs of every node, comma-separated.
func (c *Cluster) URLs() string {
	var urls []string
	for _, nd := range c.Nodes {
		urls = append(urls, nd.URL())
	}
	return strings.Join(urls, ",")
}

// URL is the node's client URL.
func (nd *Node) URL() string { return "nats://127.0.0.1:" + strconv.Itoa(nd.Port) }

func (nd *Node) args() []string {
	var routes []string
	for _, o := range nd.c.Nodes {
		if o != nd {
			routes = append(routes, "nats://127.0.0.1:"+strconv.Itoa(o.clusterPort))
		}
	}
	args := []string{"-a", "127.0.0.1", "-p", strconv.Itoa(nd.Port), "-n", nd.Name, "-js", "-sd", nd.storeDir,
		"--cluster_name", nd.c.name, "--cluster", "nats://127.0.0.1:" + strconv.Itoa(nd.clusterPort),
		"--routes", strings.Join(routes, ",")}
	if nd.c.conf != "" {
		args = append(args, "-c", nd.c.conf)
	}
	return args
}

func (nd *Node) start() error {
	nd.mu.Lock()
	defer nd.mu.Unlock()
	nd.log = &lockedBuffer{}
	cmd := exec.Command(nd.c.bin, nd.args()...)
	cmd.Stdout, cmd.Stderr = nd.log, nd.log
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("starting nats-server %s: %w", nd.Name, err)
	}
	done := make(chan struct{})
	nd.cmd, nd.done = cmd, done
	go func() {
		_ = cmd.Wait() // a killed node's exit status says nothing
		close(done)
	}()
	return waitPort(nd.Port, 10*time.Second, done, nd.log)
}

// waitPort waits until the node says it is ready and port takes
// connections, or the node's process (done closed) has exited, whose
// output log then says why. The node's own word counts: another process
// on a port the node could not bind takes connections too.
func waitPort(port int, d time.Duration, done <-chan struct{}, log *lockedBuffer) error {
	deadline := time.Now().Add(d)
	for {
		conn, err := net.DialTimeout("tcp", "127.0.0.1:"+strconv.Itoa(port), 200*time.Millisecond)
		if err == nil {
			conn.Close()
			if strings.Contains(log.String(), "Server is ready") {
				return nil
			}
			err = errors.New("the node has not said it is ready")
		}
		select {
		case <-done:
			return fmt.Errorf("nats-server on port %d exited before listening: %s", port, lastLines(log.String(), 5))
		default:
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("nats-server on port %d not listening after %s: %w: %s", port, d, err, lastLines(log.String(), 5))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// lastLines is the last n lines of s.
func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

// PID is the node's process id; 0 when it is not running.
func (nd *Node) PID() int {
	nd.mu.Lock()
	defer nd.mu.Unlock()
	if nd.cmd == nil {
		return 0
	}
	return nd.cmd.Process.Pid
}

// Kill sends the node SIGKILL (no shutdown: what a crash leaves).
func (nd *Node) Kill() {
	nd.mu.Lock()
	defer nd.mu.Unlock()
	if nd.cmd == nil {
		return
	}
	_ = nd.cmd.Process.Signal(syscall.SIGKILL)
	<-nd.done
	nd.cmd = nil
}

// Restart starts a killed node again on its ports and store directory.
func (nd *Node) Restart(t testing.TB) {
	t.Helper()
	if err := nd.start(); err != nil {
		t.Fatal(err)
	}
}

// Log is what the node's current process printed.
func (nd *Node) Log() string {
	nd.mu.Lock()
	log := nd.log
	nd.mu.Unlock()
	if log == nil {
		return ""
	}
	return log.String()
}

// Connect opens a connection to every node of the cluster that
// reconnects for as long as the test runs.
func (c *Cluster) Connect(t testing.TB) *nats.Conn {
	t.Helper()
	nc, err := nats.Connect(c.URLs(), nats.MaxReconnects(-1), nats.ReconnectWait(100*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	return nc
}

// WaitReady waits until the cluster's JetStream answers (a meta leader
// is elected).
func (c *Cluster) WaitReady(t testing.TB) {
	t.Helper()
	nc := c.Connect(t)
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		_, err := js.AccountInfo(ctx)
		cancel()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("nats: no JetStream meta leader after 30 s: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// StreamLeader is the node that leads stream's replicas.
func (c *Cluster) StreamLeader(t testing.TB, js jetstream.JetStream, stream string) *Node {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		s, err := js.Stream(ctx, stream)
		cancel()
		if err == nil && s.CachedInfo().Cluster != nil {
			for _, nd := range c.Nodes {
				if nd.Name == s.CachedInfo().Cluster.Leader {
					return nd
				}
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("nats: stream %s has no leader after 30 s: %v", stream, errors.Join(err))
		}
		time.Sleep(100 * time.Millisecond)
	}
}
