package wire

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"testing"
)

// BenchmarkSign compares the signer with a fresh HMAC per message (the
// baseline: what every message cost before the signer reused its keyed
// hashes).
func BenchmarkSign(b *testing.B) {
	s := NewSigner(testKey)
	frames, err := s.Serialize(sampleMessage())
	if err != nil {
		b.Fatal(err)
	}
	header, parent, metadata, content := frames[4], frames[5], frames[6], frames[7]
	b.Run("baseline=fresh-hmac", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			h := hmac.New(sha256.New, testKey)
			for _, p := range [][]byte{header, parent, metadata, content} {
				h.Write(p)
			}
			_ = []byte(hex.EncodeToString(h.Sum(nil)))
		}
	})
	b.Run("signer", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			_ = s.signature(header, parent, metadata, content)
		}
	})
}

// BenchmarkRoundTrip serializes and parses one execute_request.
func BenchmarkRoundTrip(b *testing.B) {
	s := NewSigner(testKey)
	m := sampleMessage()
	b.ReportAllocs()
	for b.Loop() {
		frames, err := s.Serialize(m)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := s.Parse(frames); err != nil {
			b.Fatal(err)
		}
	}
}
