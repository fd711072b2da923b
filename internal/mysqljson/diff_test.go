package mysqljson_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/go-mysql-org/go-mysql/replication"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/binlogstream/binlogstream/internal/mysqljson"
	th "github.com/binlogstream/binlogstream/testhelpers"
)

// partialCases are diff vectors as MySQL writes them, each with the after
// document written out by hand (keys in MySQL's order: shorter first,
// then bytewise).
var partialCases = []struct {
	name   string
	before string
	diffs  th.JSONDiffs
	after  string
}{
	{"replace a member", `{"a":1,"b":"x"}`, th.JSONDiffs{th.JSONReplace("$.a", `"new"`)},
		`{"a":"new","b":"x"}`},
	{"three diffs in one column", `{"a":1,"b":2,"c":3}`,
		th.JSONDiffs{th.JSONReplace("$.a", `10`), th.JSONRemove("$.b"), th.JSONInsert("$.d", `[true,null]`)},
		`{"a":10,"c":3,"d":[true,null]}`},
	{"nested path", `{"a":{"b":{"c":1},"x":0}}`, th.JSONDiffs{th.JSONReplace("$.a.b.c", `2.5`), th.JSONInsert("$.a.b.d", `{}`)},
		`{"a":{"b":{"c":2.5,"d":{}},"x":0}}`},
	{"array insert at the front and in a member", `{"a":[1,2,3,4]}`,
		th.JSONDiffs{th.JSONInsert("$.a[0]", `0`), th.JSONInsert("$.a[2]", `"two"`)},
		`{"a":[0,1,"two",2,3,4]}`},
	{"array insert past the end appends", `[1]`, th.JSONDiffs{th.JSONInsert("$[9]", `2`)}, `[1,2]`},
	{"array remove, the last element too", `{"a":[1,2,3]}`,
		th.JSONDiffs{th.JSONRemove("$.a[1]"), th.JSONRemove("$.a[1]")}, `{"a":[1]}`},
	{"remove the only element", `[[7]]`, th.JSONDiffs{th.JSONRemove("$[0][0]")}, `[[]]`},
	{"last and last-N cells", `[1,2,3]`, th.JSONDiffs{th.JSONReplace("$[last]", `30`), th.JSONRemove("$[last-2]")}, `[2,30]`},
	{"key insert in MySQL's order", `{"b":1,"aa":2,"ccc":3}`,
		th.JSONDiffs{th.JSONInsert("$.a", `0`), th.JSONInsert("$.ab", `4`), th.JSONInsert("$.c", `5`)},
		`{"a":0,"b":1,"c":5,"aa":2,"ab":4,"ccc":3}`},
	{"quoted member with a space", `{"key with space":1,"k":2}`,
		th.JSONDiffs{th.JSONReplace(`$."key with space"`, `"v"`), th.JSONInsert(`$."a \"q\""`, `1`)},
		`{"k":2,"a \"q\"":1,"key with space":"v"}`},
	{"member of an array cell", `[{"x":1},{"x":2}]`, th.JSONDiffs{th.JSONReplace("$[1].x", `{"y":[2.0,-7,"\n"]}`)},
		`[{"x":1},{"x":{"y":[2.0,-7,"\n"]}}]`},
	{"scalar types", `{"a":0}`,
		th.JSONDiffs{th.JSONReplace("$.a", `4294967296`), th.JSONInsert("$.b", `18446744073709551615`), th.JSONInsert("$.c", `-1.25e-7`), th.JSONInsert("$.d", `false`)},
		`{"a":4294967296,"b":18446744073709551615,"c":-1.25e-07,"d":false}`},
}

// TestPartialJSONApply applies each diff vector to the before document in
// MySQL's binary form, and checks the after document against the one
// written by hand, and against the same document written whole in binary
// form and decoded: the diff path and the whole-document path agree.
func TestPartialJSONApply(t *testing.T) {
	for _, c := range partialCases {
		t.Run(c.name, func(t *testing.T) {
			require.NotEqual(t, c.before, c.after)
			pj, err := applyVector(th.JSONBinary(c.before), c.diffs.Binary())
			require.NoError(t, err)
			assert.Equal(t, c.after, pj.After)
			whole, err := decodeText(th.JSONBinary(c.after))
			require.NoError(t, err)
			assert.Equal(t, c.after, whole, "the hand-written after document is not in MySQL's order")
			require.Len(t, pj.Diffs, len(c.diffs), "every diff of the vector is read")
			text, err := mysqljson.ApplyText(c.before, pj.Diffs)
			require.NoError(t, err)
			assert.Equal(t, c.after, text, "the diffs applied to the document as text")
			for k, d := range c.diffs {
				assert.Equal(t, d.Op, pj.Diffs[k].Op)
				assert.Equal(t, d.Path, pj.Diffs[k].Path)
				if d.Op != replication.JsonDiffOperationRemove {
					want, err := decodeText(th.JSONBinary(d.Value))
					require.NoError(t, err)
					assert.Equal(t, want, pj.Diffs[k].Value)
				}
			}
		})
	}
}

// TestPartialJSONRejected: diffs a MySQL replica rejects are errors, never
// a guessed document.
func TestPartialJSONRejected(t *testing.T) {
	for _, c := range []struct {
		before string
		diff   th.JSONDiff
	}{
		{`{"a":1}`, th.JSONReplace("$.b", `1`)},
		{`{"a":1}`, th.JSONInsert("$.a", `2`)},
		{`{"a":1}`, th.JSONRemove("$.b")},
		{`[1,2]`, th.JSONRemove("$[2]")},
		{`[1,2]`, th.JSONReplace("$[5]", `0`)},
		{`{"a":1}`, th.JSONReplace("$[0]", `0`)}, // no auto-wrapping
		{`{"a":1}`, th.JSONInsert("$.a.b", `0`)}, // parent is a scalar
		{`{"a":1}`, th.JSONInsert("$.x.y", `0`)}, // parent missing
		{`{"a":1}`, th.JSONReplace("$", `0`)},    // the root
		{`{"a":1}`, th.JSONRemove("$.*")},        // wildcards never occur in a diff
		{`{"a":1}`, th.JSONRemove("$[1 to 2]")},
	} {
		_, err := applyVector(th.JSONBinary(c.before), th.JSONDiffs{c.diff}.Binary())
		assert.Error(t, err, "%s %s on %s", c.diff.Op, c.diff.Path, c.before)
	}
	_, err := applyVector(th.JSONBinary(`{}`), []byte{3, 0, 0, 0, 7, 1, '$'})
	assert.ErrorIs(t, err, replication.ErrCorruptedJSONDiff, "unknown operation")
	_, err = applyVector(th.JSONBinary(`{}`), []byte{3, 0, 0, 0, 0, 9, '$'})
	assert.ErrorIs(t, err, replication.ErrCorruptedJSONDiff, "truncated path")
}

// TestJSONBinaryLargeLayout: a document past 64 KiB uses 4-byte offsets.
func TestJSONBinaryLargeLayout(t *testing.T) {
	big := `{"a":"` + strings.Repeat("x", 70000) + `","b":[1,2,70000]}`
	doc := th.JSONBinary(big)
	require.Equal(t, byte(0x01), doc[0], "large object")
	got, err := decodeText(doc)
	require.NoError(t, err)
	assert.Equal(t, big, got)
	pj, err := applyVector(doc, th.JSONDiffs{th.JSONRemove("$.a"), th.JSONInsert("$.b[1]", `1.5`)}.Binary())
	require.NoError(t, err)
	assert.Equal(t, `{"b":[1,1.5,2,70000]}`, pj.After)
}

// partial is what applyVector gives: the diffs of a vector as text and
// the document after them.
type partial struct {
	Diffs []mysqljson.Diff
	After string
}

// applyVector applies a diff vector (with its 4-byte length, as an after
// image holds it) to a binary JSON document, as the streamer does.
func applyVector(before, vector []byte) (*partial, error) {
	if len(vector) < 4 {
		return nil, fmt.Errorf("diff vector of %d bytes", len(vector))
	}
	cs, err := mysqljson.ReadDiffs(vector[4:])
	if err != nil {
		return nil, err
	}
	p := &partial{Diffs: make([]mysqljson.Diff, len(cs))}
	for k, c := range cs {
		p.Diffs[k] = c.Diff(true)
	}
	_, p.After, err = mysqljson.ApplyBinary(before, cs, true)
	return p, err
}

// FuzzJSONDiffVector: any document and diff vector give a result or an
// error, never a panic; a result is valid JSON.
func FuzzJSONDiffVector(f *testing.F) {
	for _, c := range partialCases {
		f.Add(th.JSONBinary(c.before), c.diffs.Binary())
	}
	f.Fuzz(func(t *testing.T, doc, vector []byte) {
		pj, err := applyVector(doc, vector)
		if err == nil && utf8.ValidString(pj.After) {
			require.True(t, json.Valid([]byte(pj.After)), "%q", pj.After)
		}
	})
}
