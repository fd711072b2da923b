// Package charset maps the servers' collation ids to charset and
// collation names, knows each charset's width, and decodes text stored
// in a charset into UTF-8. It registers with the TiDB parser the charsets
// MySQL and MariaDB have and the parser lacks, so that DDL naming them
// parses. Pure: no I/O.
package charset

import (
	"strconv"
	"strings"

	"github.com/go-mysql-org/go-mysql/mysql"
	"github.com/pingcap/tidb/pkg/parser/charset"
)

// Names maps a collation id of a server of flavor (go-mysql's
// mysql.MariaDBFlavor numbers them as MariaDB does, any other as MySQL) to
// its charset and collation names (utf8mb3 for utf8, as MariaDB 10.6+
// and MySQL 8 name it), or "" and "#ID" when the id is unknown.
func Names(flavor string, id uint64) (cs, coll string) {
	if flavor == mysql.MariaDBFlavor {
		if cs, coll, ok := mariadbCollation(id); ok {
			return cs, coll
		}
		return "", "#" + strconv.FormatUint(id, 10)
	}
	return collationName(id)
}

// collationName maps a collation id to its charset and collation names as
// MySQL numbers them (the TiDB parser's table), utf8 named utf8mb3.
func collationName(id uint64) (cs, coll string) {
	if id == 63 {
		return "binary", "binary"
	}
	c, err := charset.GetCollationByID(int(id))
	if err != nil {
		return "", "#" + strconv.FormatUint(id, 10)
	}
	return Normalize(c.CharsetName), NormalizeCollation(c.Name)
}

// mariadbCollation is a MariaDB collation id's charset and collation:
//   - below 512, MySQL's ids, but for the five Unicode Croatian ones
//     MariaDB renamed;
//   - from 576, a block of 32 ids per Unicode charset;
//   - from 1024, the NO PAD twin of the collation 1024 below;
//   - from 2048, the UCA 14.0.0 collations: 256 ids per Unicode charset,
//     8 per tailoring (accent and case sensitivity, PAD or NO PAD).
//
// Checked against a server's full list by TestIntegrationCollationIDs.
func mariadbCollation(id uint64) (cs, coll string, ok bool) {
	switch {
	case id >= 2048:
		b := (id - 2048) / 256
		if b >= uint64(len(uca1400Charsets)) {
			return "", "", false
		}
		cs := uca1400Charsets[b]
		t := id % 256 / 8
		if t >= uint64(len(uca1400Tailorings)) || uca1400Tailorings[t] == "-" {
			return "", "", false
		}
		coll := cs + "_uca1400_"
		if uca1400Tailorings[t] != "" {
			coll += uca1400Tailorings[t] + "_"
		}
		return cs, coll + uca1400Variants[id%8], true
	case id >= 1024:
		cs, pad, ok := mariadbCollation(id - 1024)
		if !ok || cs == "binary" || strings.Contains(pad, "nopad") {
			return "", "", false
		}
		if strings.HasSuffix(pad, "_bin") {
			return cs, cs + "_nopad_bin", true
		}
		i := strings.LastIndexByte(pad, '_')
		return cs, pad[:i+1] + "nopad_" + pad[i+1:], true
	case id >= 576:
		b, k := (id-576)/32, (id-576)%32
		if b >= uint64(len(mariadbUnicodeCharsets)) || k >= uint64(len(mariadbUnicodeExtra)) {
			return "", "", false
		}
		cs := mariadbUnicodeCharsets[b]
		return cs, cs + "_" + mariadbUnicodeExtra[k], true
	case id >= 512:
		return "", "", false
	}
	cs, coll = collationName(id)
	if cs == "" {
		return "", "", false
	}
	switch id {
	case 122, 149, 181, 213, 245: // MySQL 5.6.1's Unicode Croatian: MariaDB's "croatian_ci" is from 576 up
		coll = strings.TrimSuffix(coll, "_ci") + "_mysql561_ci"
	}
	return cs, coll, true
}

// mariadbUnicodeCharsets are the charsets of MariaDB's blocks of 32
// Unicode collation ids from 576, in order (utf16le has none);
// uca1400Charsets those of the blocks of 256 from 2048.
var (
	mariadbUnicodeCharsets = []string{"utf8mb3", "utf8mb4", "ucs2", "utf16", "utf16le", "utf32"}
	uca1400Charsets        = []string{"utf8mb3", "utf8mb4", "ucs2", "utf16", "utf32"}
)

var (
	mariadbUnicodeExtra = []string{"croatian_ci", "myanmar_ci", "thai_520_w2"}
	// uca1400Tailorings by number; "-" is a number MariaDB leaves unused.
	uca1400Tailorings = []string{"", "icelandic", "latvian", "romanian", "slovenian", "polish", "estonian",
		"spanish", "swedish", "turkish", "czech", "danish", "lithuanian", "slovak", "spanish2", "roman",
		"persian", "esperanto", "hungarian", "sinhala", "german2", "-", "-", "vietnamese", "croatian"}
	uca1400Variants = [8]string{"ai_ci", "ai_cs", "as_ci", "as_cs", "nopad_ai_ci", "nopad_ai_cs", "nopad_as_ci", "nopad_as_cs"}
)

// CharsFromBytes turns a byte length into characters for a charset of
// known width; with an unknown charset it returns the bytes.
func CharsFromBytes(n int, cs string) int {
	if w := Width(cs); w > 0 {
		return n / w
	}
	return n
}

// Width is charset cs's maximum bytes per character, 0 if unknown.
func Width(cs string) int {
	if cs == "" {
		return 0
	}
	if info, err := charset.GetCharsetInfo(cs); err == nil {
		return info.Maxlen
	}
	return 0
}

// serverCharsets are the MySQL and MariaDB charsets the TiDB parser does
// not accept (it knows utf8*, latin1, ascii, binary, gbk, gb18030), with
// their width and default collation. init registers them with the parser,
// so that DDL naming them parses and Width knows them; charsets it
// already has are left alone.
var serverCharsets = []struct {
	name    string
	width   int
	collate string
}{
	{"utf16", 4, "utf16_general_ci"}, {"utf16le", 4, "utf16le_general_ci"}, {"utf32", 4, "utf32_general_ci"},
	{"ucs2", 2, "ucs2_general_ci"}, {"latin2", 1, "latin2_general_ci"}, {"latin5", 1, "latin5_turkish_ci"},
	{"latin7", 1, "latin7_general_ci"}, {"cp1250", 1, "cp1250_general_ci"}, {"cp1251", 1, "cp1251_general_ci"},
	{"cp1256", 1, "cp1256_general_ci"}, {"cp1257", 1, "cp1257_general_ci"}, {"cp850", 1, "cp850_general_ci"},
	{"cp852", 1, "cp852_general_ci"}, {"cp866", 1, "cp866_general_ci"}, {"koi8r", 1, "koi8r_general_ci"},
	{"koi8u", 1, "koi8u_general_ci"}, {"greek", 1, "greek_general_ci"}, {"hebrew", 1, "hebrew_general_ci"},
	{"armscii8", 1, "armscii8_general_ci"}, {"geostd8", 1, "geostd8_general_ci"}, {"keybcs2", 1, "keybcs2_general_ci"},
	{"macce", 1, "macce_general_ci"}, {"macroman", 1, "macroman_general_ci"}, {"swe7", 1, "swe7_swedish_ci"},
	{"dec8", 1, "dec8_swedish_ci"}, {"hp8", 1, "hp8_english_ci"}, {"tis620", 1, "tis620_thai_ci"},
	{"big5", 2, "big5_chinese_ci"}, {"sjis", 2, "sjis_japanese_ci"}, {"cp932", 2, "cp932_japanese_ci"},
	{"euckr", 2, "euckr_korean_ci"}, {"gb2312", 2, "gb2312_chinese_ci"}, {"ujis", 3, "ujis_japanese_ci"},
	{"eucjpms", 3, "eucjpms_japanese_ci"},
}

func init() {
	for _, c := range serverCharsets {
		if _, err := charset.GetCharsetInfo(c.name); err == nil {
			continue
		}
		colls := map[string]*charset.Collation{}
		if co, err := charset.GetCollationByName(c.collate); err == nil {
			colls[co.Name] = co
		}
		charset.AddCharset(&charset.Charset{Name: c.name, DefaultCollation: c.collate, Collations: colls, Maxlen: c.width})
	}
}

// Normalize names charset utf8 utf8mb3, as MariaDB 10.6+ and MySQL 8 do;
// other names are returned as they are.
func Normalize(cs string) string {
	if cs == "utf8" {
		return "utf8mb3"
	}
	return cs
}

// NormalizeCollation names a utf8_ collation utf8mb3_, as Normalize
// names its charset.
func NormalizeCollation(c string) string {
	if strings.HasPrefix(c, "utf8_") {
		return "utf8mb3_" + c[5:]
	}
	return c
}
