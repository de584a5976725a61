package authwatch

import (
	"errors"
	"testing"
)

// FuzzReader: whatever a server sends, the watch never panics, and its verdict (the refusal, the
// password asked, the bytes the client got before it) does not depend on how the bytes arrive.
func FuzzReader(f *testing.F) {
	f.Add(cat(sasl, challenge("16385"), saslFinal, ok, ready), uint8(3), uint16(16384))
	f.Add(cat(negotiate, sasl, challenge("4096"), saslFinal, ok, ready), uint8(7), uint16(4096))
	f.Add(cat(ok, sasl, challenge("99999999"), ready), uint8(1), uint16(0))
	f.Add(cat(ok, ready, challenge("99999999")), uint8(1), uint16(0))
	f.Add(cat(refusal, challenge("99999999")), uint8(2), uint16(0))
	f.Add(cat(sasl, longChallg), uint8(5), uint16(0))
	f.Fuzz(func(t *testing.T, stream []byte, size uint8, max uint16) {
		whole, c1, err1 := readAll(stream, len(stream)+1, int(max))
		split, c2, err2 := readAll(stream, int(size)%16+1, int(max))
		var i1, i2 *IterationsError
		if errors.As(err1, &i1) != errors.As(err2, &i2) || (i1 != nil && *i1 != *i2) || errors.Is(err1, ErrBadChallenge) != errors.Is(err2, ErrBadChallenge) {
			t.Fatalf("read whole: %v; read in pieces: %v", err1, err2)
		}
		if c1.PasswordAsked() != c2.PasswordAsked() {
			t.Fatalf("password asked: %v read whole, %v in pieces", c1.PasswordAsked(), c2.PasswordAsked())
		}
		if err1 == nil && string(whole) != string(stream) || err2 == nil && string(split) != string(stream) {
			t.Fatalf("not refused, but the client got %d and %d bytes of %d", len(whole), len(split), len(stream))
		}
		if i1 != nil && (i1.Iterations <= i1.Max || len(split) >= challengeEnd(stream)) {
			t.Fatalf("refused %+v, the client got %d bytes, the challenge ends at %d", *i1, len(split), challengeEnd(stream))
		}
	})
}
