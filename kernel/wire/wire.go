// Package wire encodes and decodes Jupyter messages as they travel over
// ZeroMQ: routing identities, the "<IDS|MSG>" delimiter, an HMAC-SHA256
// signature, four JSON dictionaries (header, parent header, metadata,
// content) and optional binary buffers.
//
// The package knows nothing about sockets or message semantics; the kernel
// package decides what a message means. Parse never trusts its input: a
// message whose signature does not verify is rejected before any of its
// JSON is decoded, so unsigned input cannot reach a JSON parser, let alone
// user code.
package wire

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"sync"
	"time"

	"github.com/google/uuid"
)

// ProtocolVersion is the Jupyter messaging protocol version this package
// speaks and the kernel declares in kernel_info_reply.
const ProtocolVersion = "5.3"

// Delimiter separates routing identities from the signed part of a message.
const Delimiter = "<IDS|MSG>"

// DateFormat is the ISO 8601 layout of header dates (UTC, microseconds).
const DateFormat = "2006-01-02T15:04:05.000000Z07:00"

// Errors returned by Parse; they are wrapped with detail, test with errors.Is.
var (
	ErrNoDelimiter  = errors.New("no <IDS|MSG> delimiter")
	ErrShort        = errors.New("fewer than 5 frames after the delimiter")
	ErrSignature    = errors.New("bad or missing signature")
	ErrMalformed    = errors.New("malformed message")
	errNotAnObject  = errors.New("not a JSON object")
	emptyDictionary = json.RawMessage("{}")
)

// Header is a message header. Every message carries a fresh MsgID.
type Header struct {
	MsgID    string `json:"msg_id"`
	Session  string `json:"session"`
	Username string `json:"username"`
	Date     string `json:"date"`
	MsgType  string `json:"msg_type"`
	Version  string `json:"version"`
}

// NewHeader returns a header with a fresh msg_id, the current time and the
// protocol version.
func NewHeader(msgType, session, username string) Header {
	return Header{
		MsgID:    uuid.NewString(),
		Session:  session,
		Username: username,
		Date:     time.Now().UTC().Format(DateFormat),
		MsgType:  msgType,
		Version:  ProtocolVersion,
	}
}

// Message is one Jupyter message.
type Message struct {
	// Identities are the ZeroMQ routing frames before the delimiter; a
	// reply carries the request's identities so ROUTER sends it back to the
	// peer that asked.
	Identities [][]byte
	Header     Header
	// Parent is the parent header as raw JSON, echoed byte for byte from
	// the request ("{}" when there is none).
	Parent   json.RawMessage
	Metadata json.RawMessage
	Content  json.RawMessage
	Buffers  [][]byte

	// rawHeader keeps the header exactly as received, so that replies can
	// echo it as their parent header without losing fields this package
	// does not model (e.g. subshell_id).
	rawHeader json.RawMessage
}

// RawHeader returns the header as received when m came from Parse, and the
// marshalled Header otherwise. Use it as the Parent of a reply.
func (m *Message) RawHeader() json.RawMessage {
	if m.rawHeader != nil {
		return m.rawHeader
	}
	b, _ := json.Marshal(m.Header)
	return b
}

// Signer signs and verifies messages with HMAC-SHA256. An empty key turns
// signing off, as the protocol specifies. A Signer is safe for concurrent
// use.
type Signer struct {
	key []byte
	// macs holds keyed HMACs: hmac.New hashes the key into its pads and
	// allocates both SHA-256 states, work a reset HMAC skips on every
	// message.
	macs sync.Pool
}

// NewSigner returns a signer for key.
func NewSigner(key []byte) *Signer {
	s := &Signer{key: append([]byte(nil), key...)}
	s.macs.New = func() any { return hmac.New(sha256.New, s.key) }
	return s
}

// Enabled reports whether messages are signed.
func (s *Signer) Enabled() bool { return len(s.key) > 0 }

// mac writes the HMAC of the frames into sum.
func (s *Signer) mac(sum *[sha256.Size]byte, header, parent, metadata, content []byte) {
	h := s.macs.Get().(hash.Hash)
	h.Reset()
	h.Write(header)
	h.Write(parent)
	h.Write(metadata)
	h.Write(content)
	h.Sum(sum[:0])
	s.macs.Put(h)
}

// signature returns the hex signature frame, or an empty frame when
// signing is off.
func (s *Signer) signature(header, parent, metadata, content []byte) []byte {
	if !s.Enabled() {
		return []byte{}
	}
	var sum [sha256.Size]byte
	s.mac(&sum, header, parent, metadata, content)
	sig := make([]byte, hex.EncodedLen(len(sum)))
	hex.Encode(sig, sum[:])
	return sig
}

// Sign returns the hex signature of the four signed frames, or "" when
// signing is off.
func (s *Signer) Sign(header, parent, metadata, content []byte) string {
	return string(s.signature(header, parent, metadata, content))
}

// verify checks sig in constant time.
func (s *Signer) verify(sig []byte, signed [][]byte) bool {
	if !s.Enabled() {
		return true
	}
	var got, want [sha256.Size]byte
	if hex.DecodedLen(len(sig)) != len(got) {
		return false
	}
	if _, err := hex.Decode(got[:], sig); err != nil {
		return false
	}
	s.mac(&want, signed[0], signed[1], signed[2], signed[3])
	return hmac.Equal(got[:], want[:])
}

// Parse decodes and verifies the frames of one message. The signature is
// checked before any JSON is decoded. The header must carry a msg_type,
// and all four dictionaries must be JSON objects.
func (s *Signer) Parse(frames [][]byte) (*Message, error) {
	delim := -1
	for i, f := range frames {
		if string(f) == Delimiter {
			delim = i
			break
		}
	}
	if delim < 0 {
		return nil, fmt.Errorf("wire: %w among %d frames", ErrNoDelimiter, len(frames))
	}
	rest := frames[delim+1:]
	if len(rest) < 5 {
		return nil, fmt.Errorf("wire: %w (got %d)", ErrShort, len(rest))
	}
	signed := rest[1:5]
	if !s.verify(rest[0], signed) {
		return nil, fmt.Errorf("wire: %w", ErrSignature)
	}
	m := &Message{
		Identities: cloneFrames(frames[:delim]),
		Buffers:    cloneFrames(rest[5:]),
	}
	names := [4]string{"header", "parent_header", "metadata", "content"}
	raws := [4]*json.RawMessage{&m.rawHeader, &m.Parent, &m.Metadata, &m.Content}
	for i, f := range signed {
		if err := checkObject(f); err != nil {
			return nil, fmt.Errorf("wire: %w: %s: %v", ErrMalformed, names[i], err)
		}
		*raws[i] = append(json.RawMessage(nil), f...)
	}
	if err := json.Unmarshal(m.rawHeader, &m.Header); err != nil {
		return nil, fmt.Errorf("wire: %w: header: %v", ErrMalformed, err)
	}
	if m.Header.MsgType == "" {
		return nil, fmt.Errorf("wire: %w: header has no msg_type", ErrMalformed)
	}
	return m, nil
}

// checkObject reports whether b is one well-formed JSON object.
func checkObject(b []byte) error {
	if !json.Valid(b) {
		return errors.New("invalid JSON")
	}
	if t := bytes.TrimLeft(b, " \t\r\n"); len(t) == 0 || t[0] != '{' {
		return errNotAnObject
	}
	return nil
}

// Serialize returns the frames of m, signed. Nil Parent, Metadata and
// Content are sent as "{}".
func (s *Signer) Serialize(m *Message) ([][]byte, error) {
	header, err := json.Marshal(m.Header)
	if err != nil {
		return nil, fmt.Errorf("wire: header: %w", err)
	}
	parent, metadata, content := orEmpty(m.Parent), orEmpty(m.Metadata), orEmpty(m.Content)
	frames := make([][]byte, 0, len(m.Identities)+6+len(m.Buffers))
	frames = append(frames, m.Identities...)
	frames = append(frames,
		[]byte(Delimiter),
		s.signature(header, parent, metadata, content),
		header, parent, metadata, content)
	return append(frames, m.Buffers...), nil
}

func orEmpty(r json.RawMessage) json.RawMessage {
	if len(r) == 0 {
		return emptyDictionary
	}
	return r
}

func cloneFrames(fs [][]byte) [][]byte {
	if len(fs) == 0 {
		return nil
	}
	out := make([][]byte, len(fs))
	for i, f := range fs {
		out[i] = append([]byte(nil), f...)
	}
	return out
}

// Signature returns the signature frame of serialized frames, or nil when
// there is no delimiter. The kernel uses it to drop replayed messages.
func Signature(frames [][]byte) []byte {
	for i, f := range frames {
		if string(f) == Delimiter && i+1 < len(frames) {
			return frames[i+1]
		}
	}
	return nil
}
