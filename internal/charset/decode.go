package charset

import (
	"strings"
	"unicode/utf8"

	"golang.org/x/text/encoding"
	"golang.org/x/text/encoding/charmap"
	"golang.org/x/text/encoding/japanese"
	"golang.org/x/text/encoding/korean"
	"golang.org/x/text/encoding/simplifiedchinese"
	"golang.org/x/text/encoding/traditionalchinese"
	"golang.org/x/text/encoding/unicode"
	"golang.org/x/text/encoding/unicode/utf32"
)

// Decode turns text stored in charset cs into UTF-8: as it is for the
// UTF-8 charsets (and "", not known), by the server's latin1 (cp1252 with
// its five undefined bytes kept as code points) for latin1, by the
// charset's encoding for the others this package knows. ok is false for a
// charset it does not know and for bytes that do not decode; binary is
// the caller's to handle.
func Decode(b []byte, cs string) (s string, ok bool) {
	if IsUTF8(cs) {
		return string(b), true
	}
	if cs == "latin1" {
		return decodeLatin1(b), true
	}
	enc := textEncoding(cs)
	if enc == nil {
		return "", false
	}
	out, err := enc.NewDecoder().Bytes(b)
	if err != nil || !utf8.Valid(out) {
		return "", false
	}
	return string(out), true
}

// IsUTF8 reports whether text in charset cs is UTF-8 as stored ("": not
// known, taken as UTF-8 as go-mysql does).
func IsUTF8(cs string) bool {
	switch cs {
	case "", "utf8mb4", "utf8mb3", "utf8", "ascii":
		return true
	}
	return false
}

// ASCIICompatible reports whether cs is one of the single-byte charsets whose bytes below 0x80 are
// ASCII, so that pure ASCII text is the same string in UTF-8.
func ASCIICompatible(cs string) bool {
	switch cs {
	case "latin1", "latin2", "latin5", "latin7", "greek", "hebrew", "cp1250", "cp1251", "cp1256", "cp1257",
		"cp850", "cp852", "cp866", "koi8r", "koi8u", "macroman":
		return true
	}
	return false
}

// IsASCII reports whether s is 7-bit ASCII, the same bytes in every
// ASCII-compatible charset.
func IsASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

// decodeLatin1 decodes the server's latin1, which is cp1252 with the five
// bytes cp1252 leaves undefined mapped to the same code points.
func decodeLatin1(b []byte) string {
	var out strings.Builder
	out.Grow(len(b))
	for _, c := range b {
		switch {
		case c < 0x80 || c >= 0xA0:
			out.WriteRune(rune(c))
		default:
			r := charmap.Windows1252.DecodeByte(c)
			if r == utf8.RuneError {
				r = rune(c)
			}
			out.WriteRune(r)
		}
	}
	return out.String()
}

// textEncoding is the x/text encoding of charset cs, nil when none is
// known here.
func textEncoding(cs string) encoding.Encoding {
	switch cs {
	case "ucs2", "utf16":
		return unicode.UTF16(unicode.BigEndian, unicode.IgnoreBOM)
	case "utf16le":
		return unicode.UTF16(unicode.LittleEndian, unicode.IgnoreBOM)
	case "utf32":
		return utf32.UTF32(utf32.BigEndian, utf32.IgnoreBOM)
	case "latin2":
		return charmap.ISO8859_2
	case "latin5":
		return charmap.ISO8859_9
	case "latin7":
		return charmap.ISO8859_13
	case "greek":
		return charmap.ISO8859_7
	case "hebrew":
		return charmap.ISO8859_8
	case "cp1250":
		return charmap.Windows1250
	case "cp1251":
		return charmap.Windows1251
	case "cp1256":
		return charmap.Windows1256
	case "cp1257":
		return charmap.Windows1257
	case "cp850":
		return charmap.CodePage850
	case "cp852":
		return charmap.CodePage852
	case "cp866":
		return charmap.CodePage866
	case "koi8r":
		return charmap.KOI8R
	case "koi8u":
		return charmap.KOI8U
	case "macroman":
		return charmap.Macintosh
	case "sjis", "cp932":
		return japanese.ShiftJIS
	case "ujis", "eucjpms":
		return japanese.EUCJP
	case "euckr":
		return korean.EUCKR
	case "gbk", "gb2312":
		return simplifiedchinese.GBK
	case "gb18030":
		return simplifiedchinese.GB18030
	case "big5":
		return traditionalchinese.Big5
	}
	return nil
}
