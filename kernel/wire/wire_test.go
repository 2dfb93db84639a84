package wire

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"
)

var testKey = []byte("a0436f6c-1916-498b-8eb9-e81ab9368e84")

func sampleMessage() *Message {
	return &Message{
		Identities: [][]byte{[]byte("peer-1"), []byte("peer-2")},
		Header:     NewHeader("execute_request", "sess", "alice"),
		Parent:     json.RawMessage(`{"msg_id":"p1","msg_type":"x"}`),
		Metadata:   json.RawMessage(`{"cellId":"c7"}`),
		Content:    json.RawMessage(`{"code":"1+1","silent":false}`),
		Buffers:    [][]byte{{0, 1, 2, 255}},
	}
}

func TestRoundTrip(t *testing.T) {
	for _, key := range [][]byte{testKey, nil} {
		s := NewSigner(key)
		m := sampleMessage()
		frames, err := s.Serialize(m)
		if err != nil {
			t.Fatal(err)
		}
		if string(frames[2]) != Delimiter {
			t.Fatalf("frame 2 is %q, want the delimiter", frames[2])
		}
		if sig := frames[3]; (len(key) == 0) != (len(sig) == 0) {
			t.Fatalf("key %q gave signature %q", key, sig)
		}
		got, err := s.Parse(frames)
		if err != nil {
			t.Fatalf("key %q: %v", key, err)
		}
		if got.Header != m.Header {
			t.Errorf("header %+v, want %+v", got.Header, m.Header)
		}
		for name, pair := range map[string][2][]byte{
			"parent":   {got.Parent, m.Parent},
			"metadata": {got.Metadata, m.Metadata},
			"content":  {got.Content, m.Content},
		} {
			if !bytes.Equal(pair[0], pair[1]) {
				t.Errorf("%s %s, want %s", name, pair[0], pair[1])
			}
		}
		if len(got.Identities) != 2 || string(got.Identities[1]) != "peer-2" {
			t.Errorf("identities %q", got.Identities)
		}
		if len(got.Buffers) != 1 || !bytes.Equal(got.Buffers[0], m.Buffers[0]) {
			t.Errorf("buffers %v", got.Buffers)
		}
		// A reply echoes the request header verbatim as its parent.
		if !bytes.Equal(got.RawHeader(), frames[4]) {
			t.Errorf("RawHeader %s, want %s", got.RawHeader(), frames[4])
		}
	}
}

func TestEmptyDictionariesDefault(t *testing.T) {
	s := NewSigner(testKey)
	frames, err := s.Serialize(&Message{Header: NewHeader("status", "s", "u")})
	if err != nil {
		t.Fatal(err)
	}
	for i := 3; i < 6; i++ { // delimiter, signature, header, then the three dictionaries
		if string(frames[i]) != "{}" {
			t.Errorf("frame %d is %q, want {}", i, frames[i])
		}
	}
}

func TestRejected(t *testing.T) {
	s := NewSigner(testKey)
	good, err := s.Serialize(sampleMessage())
	if err != nil {
		t.Fatal(err)
	}
	mutate := func(f func([][]byte) [][]byte) [][]byte {
		c := make([][]byte, len(good))
		for i := range good {
			c[i] = append([]byte(nil), good[i]...)
		}
		return f(c)
	}
	resign := func(fs [][]byte) [][]byte {
		fs[3] = []byte(s.Sign(fs[4], fs[5], fs[6], fs[7]))
		return fs
	}
	cases := []struct {
		name   string
		frames [][]byte
		want   error
	}{
		{"tampered signature", mutate(func(fs [][]byte) [][]byte {
			if fs[3][0] == 'a' {
				fs[3][0] = 'b'
			} else {
				fs[3][0] = 'a'
			}
			return fs
		}), ErrSignature},
		{"tampered content", mutate(func(fs [][]byte) [][]byte { fs[7] = []byte(`{"code":"rm -rf"}`); return fs }), ErrSignature},
		{"missing signature", mutate(func(fs [][]byte) [][]byte { fs[3] = nil; return fs }), ErrSignature},
		{"non-hex signature", mutate(func(fs [][]byte) [][]byte { fs[3] = bytes.Repeat([]byte("zz"), 32); return fs }), ErrSignature},
		{"truncated signature", mutate(func(fs [][]byte) [][]byte { fs[3] = fs[3][:10]; return fs }), ErrSignature},
		{"signature with an extra digit", mutate(func(fs [][]byte) [][]byte { fs[3] = append(fs[3], '0'); return fs }), ErrSignature},
		{"signature with an extra byte", mutate(func(fs [][]byte) [][]byte { fs[3] = append(fs[3], "00"...); return fs }), ErrSignature},
		{"signed with another key", mutate(func(fs [][]byte) [][]byte {
			fs[3] = []byte(NewSigner([]byte("other")).Sign(fs[4], fs[5], fs[6], fs[7]))
			return fs
		}), ErrSignature},
		{"missing delimiter", mutate(func(fs [][]byte) [][]byte { return append(fs[:2], fs[3:]...) }), ErrNoDelimiter},
		{"too few frames", mutate(func(fs [][]byte) [][]byte { return fs[:6] }), ErrShort},
		{"bad JSON content", mutate(func(fs [][]byte) [][]byte { fs[7] = []byte(`{"code":`); return resign(fs) }), ErrMalformed},
		{"content not an object", mutate(func(fs [][]byte) [][]byte { fs[7] = []byte(`[1,2]`); return resign(fs) }), ErrMalformed},
		{"header without msg_type", mutate(func(fs [][]byte) [][]byte { fs[4] = []byte(`{"msg_id":"x"}`); return resign(fs) }), ErrMalformed},
		{"header field of wrong type", mutate(func(fs [][]byte) [][]byte { fs[4] = []byte(`{"msg_type":7}`); return resign(fs) }), ErrMalformed},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m, err := s.Parse(c.frames)
			if !errors.Is(err, c.want) {
				t.Fatalf("Parse = %v, %v; want error %v", m, err, c.want)
			}
		})
	}
}

func TestUnsignedKernelAcceptsUnsignedMessages(t *testing.T) {
	frames, _ := NewSigner(nil).Serialize(sampleMessage())
	if _, err := NewSigner(nil).Parse(frames); err != nil {
		t.Fatal(err)
	}
	// A kernel with a key never accepts an unsigned message.
	if _, err := NewSigner(testKey).Parse(frames); !errors.Is(err, ErrSignature) {
		t.Fatalf("signed kernel accepted an unsigned message: %v", err)
	}
}

func TestNewHeader(t *testing.T) {
	a, b := NewHeader("status", "s", "u"), NewHeader("status", "s", "u")
	if a.MsgID == b.MsgID || len(a.MsgID) != 36 {
		t.Errorf("msg_ids %q and %q are not fresh UUIDs", a.MsgID, b.MsgID)
	}
	d, err := time.Parse(time.RFC3339Nano, a.Date)
	if err != nil || !strings.HasSuffix(a.Date, "Z") {
		t.Fatalf("date %q is not ISO 8601 UTC: %v", a.Date, err)
	}
	if time.Since(d) > time.Minute || time.Since(d) < -time.Minute {
		t.Errorf("date %v is not now", d)
	}
	if a.Version != ProtocolVersion {
		t.Errorf("version %q", a.Version)
	}
}

func TestSignatureMatchesPythonHMAC(t *testing.T) {
	// Reference value computed with Python's hmac.new(key, h+p+m+c, sha256).
	s := NewSigner([]byte("key"))
	got := s.Sign([]byte(`{"a":1}`), []byte(`{}`), []byte(`{}`), []byte(`{}`))
	const want = "f1128388193e4dd1aa760827bd756a1b40b627676b5efe22c0e8297919bfa218"
	if got != want {
		t.Fatalf("signature %q, want %q", got, want)
	}
}

// FuzzParse feeds arbitrary frames (NUL-separated in the fuzz input) to
// both a signing and a non-signing parser: the first must reject anything
// not signed with its key, the second exercises the JSON checks. Neither may
// panic, and whatever is accepted must survive a round trip.
func FuzzParse(f *testing.F) {
	signed, _ := NewSigner(testKey).Serialize(sampleMessage())
	f.Add(bytes.Join(signed, []byte{0}))
	unsigned, _ := NewSigner(nil).Serialize(sampleMessage())
	f.Add(bytes.Join(unsigned, []byte{0}))
	f.Fuzz(func(t *testing.T, data []byte) {
		frames := bytes.Split(data, []byte{0})
		for _, s := range []*Signer{NewSigner(testKey), NewSigner(nil)} {
			fuzzOne(t, s, frames)
		}
	})
}

func fuzzOne(t *testing.T, s *Signer, frames [][]byte) {
	m, err := s.Parse(frames)
	if err != nil {
		return
	}
	{
		// Anything accepted must re-serialize to frames that parse to the
		// same message.
		out, err := s.Serialize(m)
		if err != nil {
			t.Fatal(err)
		}
		m2, err := s.Parse(out)
		if err != nil {
			t.Fatalf("re-parse of accepted message: %v", err)
		}
		if m2.Header.MsgType != m.Header.MsgType || !bytes.Equal(m2.Content, m.Content) {
			t.Fatalf("round trip changed the message")
		}
	}
}
