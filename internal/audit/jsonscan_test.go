package audit

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"strings"
	"testing"
)

// The scanner agrees with encoding/json on where values end, for strings
// with quotes and backslashes at every offset of an eight-byte word.
func TestScannerAgreesWithEncodingJSON(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	alphabet := []string{"a", "\"", "\\", "{", "}", "[", "]", ",", ":", " ", "é", "\n"}
	str := func() string {
		var b strings.Builder
		for range rng.IntN(20) {
			b.WriteString(alphabet[rng.IntN(len(alphabet))])
		}
		return b.String()
	}
	var value func(depth int) any
	value = func(depth int) any {
		switch n := rng.IntN(5); {
		case depth > 3 || n == 0:
			return str()
		case n == 1:
			return rng.Float64()
		case n == 2:
			var l []any
			for range rng.IntN(4) {
				l = append(l, value(depth+1))
			}
			return l
		default:
			m := map[string]any{}
			for range rng.IntN(4) {
				m[str()] = value(depth + 1)
			}
			return m
		}
	}
	for i := range 2000 {
		var items []any
		for range 1 + rng.IntN(4) {
			items = append(items, value(0))
		}
		raw, _ := json.Marshal(items)
		if i%2 == 0 {
			var buf bytes.Buffer
			json.Indent(&buf, raw, "", "    ")
			raw = buf.Bytes()
		}
		var want []json.RawMessage
		if err := json.Unmarshal(raw, &want); err != nil {
			t.Fatal(err)
		}
		got, err := elements(raw)
		if err != nil {
			t.Fatalf("%s: %v", raw, err)
		}
		if len(got) != len(want) {
			t.Fatalf("%s: %d elements, want %d", raw, len(got), len(want))
		}
		for k := range got {
			if !bytes.Equal(got[k], want[k]) {
				t.Fatalf("element %d of %s:\n got %s\nwant %s", k, raw, got[k], want[k])
			}
		}
	}
	if _, err := skipValue([]byte(`"abc\"`), 0); err == nil {
		t.Error("an unterminated string was accepted")
	}
}
