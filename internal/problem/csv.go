package problem

import (
	"encoding/csv"
	"errors"
	"io"
)

// FromCSV is what an encoding/csv reader's error says, in file at the
// line the error names; an empty file (io.EOF before the header) is
// told to start with header, the file's CSV header.
func FromCSV(file string, err error, header string) Problem {
	p := Problem{File: file, Message: err.Error(), Fix: `quote a value that holds a comma or a quote, doubling the quotes inside it: "a ""b"""`, Err: err}
	var perr *csv.ParseError
	if errors.As(err, &perr) {
		p.Line, p.Message = perr.Line, perr.Err.Error()
	}
	if errors.Is(err, io.EOF) {
		p.Message, p.Fix = "the file is empty", "start with the header: "+header
	}
	return p
}
