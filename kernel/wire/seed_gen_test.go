//go:build seedgen

package wire

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// TestWriteSeeds regenerates testdata/fuzz/FuzzParse:
// go test -tags seedgen -run TestWriteSeeds ./kernel/wire/
func TestWriteSeeds(t *testing.T) {
	signed := NewSigner(testKey)
	plain := NewSigner(nil)
	m := sampleMessage()
	sf, _ := signed.Serialize(m)
	pf, _ := plain.Serialize(m)
	noIDs := sampleMessage()
	noIDs.Identities, noIDs.Buffers = nil, nil
	nf, _ := signed.Serialize(noIDs)
	seeds := map[string][][]byte{
		"signed":           sf,
		"unsigned":         pf,
		"no-identities":    nf,
		"no-delimiter":     append(append([][]byte{}, sf[:2]...), sf[3:]...),
		"short":            sf[:5],
		"bad-json":         {[]byte("<IDS|MSG>"), nil, []byte(`{"msg_type":`), []byte("{}"), []byte("{}"), []byte("{}")},
		"array-content":    {[]byte("<IDS|MSG>"), nil, []byte(`{"msg_type":"a"}`), []byte("{}"), []byte("{}"), []byte("[]")},
		"unicode-and-nest": {[]byte("<IDS|MSG>"), nil, []byte(`{"msg_type":"é\u2028","x":{"y":[1,{"z":null}]}}`), []byte(" {} "), []byte("{}"), []byte(`{"code":"\ud83d\ude00"}`)},
		"two-delimiters":   {[]byte("<IDS|MSG>"), []byte("<IDS|MSG>"), []byte(`{"msg_type":"a"}`), []byte("{}"), []byte("{}"), []byte("{}")},
	}
	dir := filepath.Join("testdata", "fuzz", "FuzzParse")
	for name, frames := range seeds {
		data := bytes.Join(frames, []byte{0})
		body := fmt.Sprintf("go test fuzz v1\n[]byte(%q)\n", data)
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
