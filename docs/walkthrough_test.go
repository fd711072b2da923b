// Package docs_test runs the walkthroughs of the READMEs as a user would
// paste them into a shell on a fresh machine with Debian's mariadb-server
// and Go: from the repository's root, each shell block of a
// "Walkthrough" section in order, in one bash process, with nothing
// prepared beforehand.
package docs_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/binlogstream/binlogstream/testhelpers/mariadb"
)

// walkthrough is one "Walkthrough" section and what its comments say
// the user sees.
type walkthrough struct {
	file, heading string
	// ports are the TCP ports it listens on: free before it runs. They
	// are below the kernel's ephemeral range, which the port-0 servers
	// of other tests take theirs from.
	ports []int
	// after[i] checks, after block i and before the next, what the
	// walkthrough's comments promise; out is its stdout so far.
	after map[int]func(t *testing.T, out string)
}

var walkthroughs = []walkthrough{
	{file: "cmd/binlog-tail/README.md", heading: "Walkthrough on a throwaway MariaDB", ports: []int{13306},
		after: map[int]func(*testing.T, string){0: func(t *testing.T, out string) {
			assert.Regexp(t, `(?m)^50000$`, out, "grep -c: every row once")
		}}},
	{file: "cmd/binlog-replicate/README.md", heading: "Walkthrough on two throwaway MariaDB servers", ports: []int{13306, 13307},
		after: map[int]func(*testing.T, string){0: func(t *testing.T, out string) {
			assert.Regexp(t, `(?m)^9000$`, out, "the target's count after the resume")
		}}},
	{file: "cmd/binlog-publish/README.md", heading: "Walkthrough", ports: []int{13306, 4222},
		after: map[int]func(*testing.T, string){0: checkPublished}},
}

// checkPublished reads the stream BINLOG the publish walkthrough leaves
// running: its two orders, inserted before and after the kill, once
// each on binlog.app.orders.
func checkPublished(t *testing.T, _ string) {
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	nc, err := nats.Connect("nats://127.0.0.1:4222")
	require.NoError(t, err)
	defer nc.Close()
	js, err := jetstream.New(nc)
	require.NoError(t, err)
	cons, err := js.OrderedConsumer(ctx, "BINLOG", jetstream.OrderedConsumerConfig{FilterSubjects: []string{"binlog.app.orders"}})
	require.NoError(t, err)
	batch, err := cons.FetchNoWait(1000)
	require.NoError(t, err)
	ids := map[string]int{}
	for msg := range batch.Messages() {
		var line struct {
			Type string `json:"type"`
			Row  struct {
				ID int    `json:"id"`
				V  string `json:"v"`
			} `json:"row"`
		}
		require.NoError(t, json.Unmarshal(msg.Data(), &line), "%s", msg.Data())
		if line.Type == "insert" {
			ids[fmt.Sprintf("%d %s", line.Row.ID, line.Row.V)]++
		}
	}
	require.NoError(t, batch.Error())
	assert.Equal(t, map[string]int{"1 new": 1, "2 new": 1}, ids, "each order's insert once on binlog.app.orders")
}

// TestWalkthroughsAreListed: every Walkthrough section of the READMEs
// and docs is in walkthroughs, so none goes unrun.
func TestWalkthroughsAreListed(t *testing.T) {
	files, err := filepath.Glob("../cmd/*/README.md")
	require.NoError(t, err)
	more, err := filepath.Glob("*.md")
	require.NoError(t, err)
	files = append(append(files, "../README.md"), more...)
	var found []string
	for _, f := range files {
		b, err := os.ReadFile(f)
		require.NoError(t, err)
		for _, m := range regexp.MustCompile(`(?m)^## (Walkthrough.*)$`).FindAllStringSubmatch(string(b), -1) {
			found = append(found, filepath.ToSlash(strings.TrimPrefix(f, "../"))+": "+m[1])
		}
	}
	var listed []string
	for _, w := range walkthroughs {
		listed = append(listed, w.file+": "+w.heading)
		blocks, err := shellBlocks(w)
		require.NoError(t, err)
		assert.NotEmpty(t, blocks, w.file)
	}
	assert.ElementsMatch(t, listed, found)
}

// shellBlocks are the ```sh blocks of w's section, in order.
func shellBlocks(w walkthrough) ([]string, error) {
	b, err := os.ReadFile(filepath.Join("..", w.file))
	if err != nil {
		return nil, err
	}
	text := string(b)
	head := "\n## " + w.heading + "\n"
	i := strings.Index(text, head)
	if i < 0 {
		return nil, fmt.Errorf("%s: no section %q", w.file, w.heading)
	}
	section := text[i+len(head):]
	if j := strings.Index(section, "\n## "); j >= 0 {
		section = section[:j]
	}
	var blocks []string
	for _, m := range regexp.MustCompile("(?ms)^```sh\n(.*?)^```$").FindAllStringSubmatch(section, -1) {
		blocks = append(blocks, m[1])
	}
	return blocks, nil
}

// TestWalkthroughs runs each walkthrough's shell blocks in one bash
// (errexit on, so that no failing step goes unnoticed) from the
// repository's root, in a temporary directory of its own (TMPDIR),
// checks what its comments say it shows, and that it leaves nothing
// running.
func TestWalkthroughs(t *testing.T) {
	mariadb.Require(t)
	if testing.Short() {
		t.Skip("starts MariaDB servers, NATS and builds the commands")
	}
	for _, w := range walkthroughs {
		t.Run(filepath.Base(filepath.Dir(w.file)), func(t *testing.T) { runWalkthrough(t, w) })
	}
}

func runWalkthrough(t *testing.T, w walkthrough) {
	blocks, err := shellBlocks(w)
	require.NoError(t, err)
	for _, p := range w.ports {
		l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", p))
		require.NoError(t, err, "the walkthrough listens on port %d: it must be free", p)
		l.Close()
	}
	tmp := t.TempDir()
	syncDir := filepath.Join(tmp, "sync")
	require.NoError(t, os.Mkdir(syncDir, 0o700))
	// After each block but the last, the script waits for the test's
	// checks: sync/after-I says it is there, sync/go-I lets it go on.
	var script strings.Builder
	script.WriteString("set -e\n")
	for i, b := range blocks {
		script.WriteString(b)
		if i < len(blocks)-1 || w.after[i] != nil {
			fmt.Fprintf(&script, "touch %q/after-%d; while [ ! -e %q/go-%d ]; do sleep 0.05; done\n", syncDir, i, syncDir, i)
		}
	}
	file := filepath.Join(tmp, "walkthrough.sh")
	require.NoError(t, os.WriteFile(file, []byte(script.String()), 0o600))

	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "-x", file)
	cmd.Dir = ".."
	cmd.Env = append(os.Environ(), "TMPDIR="+tmp)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	// Files, not pipes: Wait returns when bash exits, whatever it left
	// running in the background.
	stdout, stderr := outFile(t, tmp, "stdout"), outFile(t, tmp, "stderr")
	cmd.Stdout, cmd.Stderr = stdout.f, stderr.f
	// The servers it started in the background end with it, on a
	// failure too: they are in its process group.
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	start := time.Now()
	require.NoError(t, cmd.Start())
	defer func() { _ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	for i := range blocks {
		if i == len(blocks)-1 && w.after[i] == nil {
			break
		}
		at := filepath.Join(syncDir, fmt.Sprintf("after-%d", i))
		for {
			if _, err := os.Stat(at); err == nil {
				break
			}
			select {
			case err := <-done:
				t.Fatalf("%s: block %d: %v\nstdout:\n%s\nstderr:\n%s", w.file, i, err, stdout.String(), stderr.String())
			case <-time.After(50 * time.Millisecond):
			}
		}
		if check := w.after[i]; check != nil {
			check(t, stdout.String())
		}
		require.NoError(t, os.WriteFile(filepath.Join(syncDir, fmt.Sprintf("go-%d", i)), nil, 0o600))
	}
	err = <-done
	require.NoError(t, err, "%s\nstdout:\n%s\nstderr:\n%s", w.file, stdout.String(), stderr.String())
	// It stops what it started: nothing of its process group is left.
	left := time.Now().Add(10 * time.Second)
	for syscall.Kill(-cmd.Process.Pid, 0) == nil {
		if time.Now().After(left) {
			out, _ := exec.Command("ps", "-o", "pid,cmd", "-g", fmt.Sprint(cmd.Process.Pid)).CombinedOutput()
			t.Fatalf("%s left processes running:\n%s", w.file, out)
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Logf("%s: %d blocks in %v; stdout:\n%s", w.file, len(blocks), time.Since(start).Round(100*time.Millisecond), stdout.String())
}

// output is a file a command writes and the test reads.
type output struct {
	f    *os.File
	path string
}

func outFile(t *testing.T, dir, name string) output {
	path := filepath.Join(dir, name)
	f, err := os.Create(path)
	require.NoError(t, err)
	t.Cleanup(func() { f.Close() })
	return output{f, path}
}

func (o output) String() string {
	b, _ := os.ReadFile(o.path)
	return string(b)
}
