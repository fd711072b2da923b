package binlogstream

import (
	"fmt"

	"github.com/go-mysql-org/go-mysql/replication"
)

// Test seams for the pure partial JSON core.

// DecodeJSONBinaryText decodes a MySQL binary JSON document to its text.
func DecodeJSONBinaryText(doc []byte) (string, error) {
	n, err := decodeJSONBinary(doc)
	if err != nil {
		return "", err
	}
	return n.String(), nil
}

// ApplyJSONDiffVector applies a diff vector (with its 4-byte length, as an
// after image holds it) to a binary JSON document, as the streamer does.
func ApplyJSONDiffVector(before, vector []byte) (*PartialJSON, error) {
	if len(vector) < 4 {
		return nil, fmt.Errorf("diff vector of %d bytes", len(vector))
	}
	return buildPartialJSON(imageColumn{present: true, data: before}, vector[4:], true)
}

// ReadRowImages walks the first n row images of a partial rows event body
// (the event without its 19-byte header) and returns how many columns
// each holds.
func ReadRowImages(body []byte, tm *replication.TableMapEvent, n int) ([]int, error) {
	imgs, err := readRowImages(body, tm, n)
	var out []int
	for _, img := range imgs {
		out = append(out, len(img))
	}
	return out, err
}
