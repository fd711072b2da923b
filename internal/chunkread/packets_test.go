package chunkread

import (
	"bytes"
	"math/rand/v2"
	"net"
	"testing"

	"github.com/go-mysql-org/go-mysql/mysql"
	"github.com/stretchr/testify/require"
)

// TestRawPackets: packets read straight from the socket come out whole
// and in order, whatever pieces the socket delivers them in: empty ones,
// ones larger than the buffer, and payloads of 16 MiB and more, which
// the protocol splits into packets of MaxPayloadLen bytes and a last
// shorter one. A packet out of sequence is refused.
func TestRawPackets(t *testing.T) {
	sizes := []int{0, 1, 250, rawBuffer - 4, rawBuffer - 3, rawBuffer + 10, 3, mysql.MaxPayloadLen, mysql.MaxPayloadLen + 7, 40}
	rng := rand.New(rand.NewPCG(1, 2))
	var stream bytes.Buffer
	var want [][]byte
	seq := uint8(1)
	for i, n := range sizes {
		payload := make([]byte, n)
		for j := range payload {
			payload[j] = byte(i + j*7)
		}
		want = append(want, payload)
		for rest := payload; ; {
			m := min(len(rest), mysql.MaxPayloadLen)
			stream.Write([]byte{byte(m), byte(m >> 8), byte(m >> 16), seq})
			stream.Write(rest[:m])
			seq++
			rest = rest[m:]
			if m < mysql.MaxPayloadLen {
				break
			}
		}
	}
	stream.Write([]byte{1, 0, 0, seq + 5, 0xfe}) // out of sequence

	client, server := net.Pipe()
	defer client.Close()
	go func() {
		defer server.Close()
		data := stream.Bytes()
		for len(data) > 0 {
			n := min(len(data), 1+rng.IntN(300_000))
			if _, err := server.Write(data[:n]); err != nil {
				return
			}
			data = data[n:]
		}
	}()
	p := &rawPackets{nc: client, buf: make([]byte, rawBuffer)}
	p.answer()
	for i, w := range want {
		var got []byte
		var err error
		if i%2 == 0 {
			got, err = p.ReadPacketReuseMem(nil)
		} else {
			got, err = p.ReadPacket()
		}
		require.NoError(t, err, "packet %d", i)
		require.True(t, bytes.Equal(w, got), "packet %d of %d bytes: got %d bytes", i, len(w), len(got))
	}
	_, err := p.next()
	require.ErrorContains(t, err, "packet sequence")
}
