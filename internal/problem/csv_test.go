package problem

import (
	"encoding/csv"
	"errors"
	"io"
	"strings"
	"testing"
)

func TestFromCSV(t *testing.T) {
	const header = "a,b"
	_, err := csv.NewReader(strings.NewReader("a,b\n1,\"x\"y\"\n")).ReadAll()
	p := FromCSV("t.csv", err, header)
	want := "t.csv:2: extraneous or missing \" in quoted-field\n    fix: quote a value that holds a comma or a quote, doubling the quotes inside it: \"a \"\"b\"\"\""
	if got := p.String(); got != want {
		t.Errorf("a parse error:\n got: %q\nwant: %q", got, want)
	}
	if !errors.Is(&p, err) {
		t.Errorf("the problem does not wrap the reader's error %v", err)
	}

	_, err = csv.NewReader(strings.NewReader("")).Read()
	p = FromCSV("t.csv", err, header)
	want = "t.csv: the file is empty\n    fix: start with the header: a,b"
	if got := p.String(); got != want {
		t.Errorf("an empty file:\n got: %q\nwant: %q", got, want)
	}
	if !errors.Is(&p, io.EOF) {
		t.Errorf("the problem for an empty file does not wrap io.EOF")
	}
}
