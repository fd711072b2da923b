package charset

import (
	"testing"

	"github.com/go-mysql-org/go-mysql/mysql"
	"github.com/stretchr/testify/require"
)

func TestNames(t *testing.T) {
	for _, c := range []struct {
		flavor   string
		id       uint64
		cs, coll string
	}{
		{mysql.MySQLFlavor, 45, "utf8mb4", "utf8mb4_general_ci"},
		{mysql.MySQLFlavor, 33, "utf8mb3", "utf8mb3_general_ci"},
		{mysql.MySQLFlavor, 63, "binary", "binary"},
		{mysql.MySQLFlavor, 9999, "", "#9999"},
		{mysql.MariaDBFlavor, 8, "latin1", "latin1_swedish_ci"},
		{mysql.MariaDBFlavor, 1024 + 8, "latin1", "latin1_swedish_nopad_ci"},
		{mysql.MariaDBFlavor, 2048 + 256, "utf8mb4", "utf8mb4_uca1400_ai_ci"},
		{mysql.MariaDBFlavor, 511, "", "#511"},
	} {
		cs, coll := Names(c.flavor, c.id)
		require.Equal(t, c.cs, cs, "%s %d", c.flavor, c.id)
		require.Equal(t, c.coll, coll, "%s %d", c.flavor, c.id)
	}
}

func TestWidth(t *testing.T) {
	require.Equal(t, 4, Width("utf8mb4"))
	require.Equal(t, 2, Width("ucs2"), "registered with the parser")
	require.Zero(t, Width("nosuch"))
	require.Equal(t, 10, CharsFromBytes(40, "utf8mb4"))
	require.Equal(t, 40, CharsFromBytes(40, ""), "unknown width: the bytes")
}

func TestDecode(t *testing.T) {
	for _, c := range []struct {
		in, cs, want string
		ok           bool
	}{
		{"caf\xe9 \x80", "latin1", "café €", true},
		{"\x81", "latin1", "\u0081", true},
		{"\xe8\xec\xff", "cp1251", "имя", true},
		{"é", "utf8mb4", "é", true},
		{"\x81", "sjis", "\ufffd", true}, // a byte that does not decode: U+FFFD
		{"x", "nosuch", "", false},
	} {
		s, ok := Decode([]byte(c.in), c.cs)
		require.Equal(t, c.ok, ok, c.cs)
		require.Equal(t, c.want, s, c.cs)
	}
	require.True(t, ASCIICompatible("latin1") && !ASCIICompatible("ucs2"))
	require.True(t, IsASCII("abc") && !IsASCII("é"))
	require.True(t, IsUTF8("") && IsUTF8("utf8mb3") && !IsUTF8("latin1"))
	require.Equal(t, "utf8mb3", Normalize("utf8"))
	require.Equal(t, "utf8mb3_bin", NormalizeCollation("utf8_bin"))
}
