package nats

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"
)

// TestClusterR3SurvivesLeaderKill: an R3 stream on three nodes keeps
// its messages and takes new ones after its leader is SIGKILLed and
// restarted.
func TestClusterR3SurvivesLeaderKill(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a 3-node cluster")
	}
	c := StartCluster(t, 3)
	js, ctx := r3Stream(t, c)
	_, err := js.Publish(ctx, "s.a", []byte("1"))
	require.NoError(t, err)

	leader := c.StreamLeader(t, js, "S")
	pid := leader.PID()
	require.NotZero(t, pid)
	leader.Kill()
	require.Zero(t, leader.PID())
	require.Eventually(t, func() bool {
		pctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		defer cancel()
		_, err := js.Publish(pctx, "s.a", []byte("2"))
		return err == nil
	}, 30*time.Second, 100*time.Millisecond)
	leader.Restart(t)
	require.NotEqual(t, pid, leader.PID())
	s, err := js.Stream(ctx, "S")
	require.NoError(t, err)
	m, err := s.GetLastMsgForSubject(ctx, "s.>")
	require.NoError(t, err)
	require.Equal(t, "2", string(m.Data))
}

// TestClusterStartsOnOtherPorts: a node whose port another process took
// between the pick and its start (a listener that takes connections, as
// another server would) is not taken for started, and the cluster starts
// again on other ports.
func TestClusterStartsOnOtherPorts(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a 3-node cluster")
	}
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer taken.Close()
	picks := 0
	pickPort = func(t testing.TB) int {
		if picks++; picks == 1 {
			return taken.Addr().(*net.TCPAddr).Port // the first node's client port
		}
		return freePort(t)
	}
	defer func() { pickPort = freePort }()
	c := StartCluster(t, 3)
	require.Greater(t, picks, 6, "the cluster started again on other ports")
	require.NotEqual(t, taken.Addr().(*net.TCPAddr).Port, c.Nodes[0].Port)
	r3Stream(t, c)
}

// r3Stream creates stream S of subjects s.> on three replicas of c, and
// returns its JetStream and a context that ends with t.
func r3Stream(t *testing.T, c *Cluster) (jetstream.JetStream, context.Context) {
	js, err := jetstream.New(c.Connect(t))
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	_, err = js.CreateStream(ctx, jetstream.StreamConfig{Name: "S", Subjects: []string{"s.>"}, Replicas: 3})
	require.NoError(t, err)
	return js, ctx
}
