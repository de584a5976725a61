package config

import (
	"fmt"
	"io"
	"strconv"
	"unicode/utf8"
)

// MaxLineLength is the longest line a configuration file may have, in bytes, not counting its '\n' (a
// '\r' before it counts). Parse refuses a longer line and the mutators of File refuse to write one.
const MaxLineLength = 4096

// MaxFileSize is the largest configuration file, in bytes (1 MiB). Load and Update read at most one byte
// more than this from disk, Parse refuses a longer file and the mutators of File refuse to grow one past it.
const MaxFileSize = 1 << 20

// maxQuoted is the most bytes of a value or a line that an error message quotes; a longer one is cut at
// a character boundary and marked with "..." and its length (see quote).
const maxQuoted = 200

// quote returns s quoted as %q does when it has at most maxQuoted bytes. A longer s is cut to its first
// maxQuoted bytes or fewer, never in the middle of a UTF-8 sequence, quoted, and followed by "..." and
// its length in bytes, e.g. "xxxx"... (5000 bytes).
func quote(s string) string {
	if len(s) <= maxQuoted {
		return strconv.Quote(s)
	}
	return strconv.Quote(s[:cut(s, maxQuoted)]) + fmt.Sprintf("... (%d bytes)", len(s))
}

// clip returns s when it has at most maxQuoted bytes, else its first maxQuoted bytes or fewer, cut at a
// character boundary, followed by "...". It is for text printed without quotes, such as a Target.
func clip(s string) string {
	if len(s) <= maxQuoted {
		return s
	}
	return s[:cut(s, maxQuoted)] + "..."
}

// cut returns where to cut s, longer than n bytes, to keep at most n bytes: n, or the start of the valid
// UTF-8 sequence that byte n continues. Invalid bytes are kept as they are (quoting shows them as \x
// escapes).
func cut(s string, n int) int {
	for i := n; i > 0 && i > n-utf8.UTFMax; i-- {
		if !utf8.RuneStart(s[i]) {
			continue
		}
		if _, size := utf8.DecodeRuneInString(s[i:]); i < n && i+size > n {
			return i
		}
		return n
	}
	return n
}

// readLimited reads r to its end, but at most MaxFileSize+1 bytes, so that Parse can refuse a file that is
// too long without the rest of it ever being read into memory.
func readLimited(r io.Reader) ([]byte, error) {
	return io.ReadAll(io.LimitReader(r, MaxFileSize+1))
}
