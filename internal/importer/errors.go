// SPDX-License-Identifier: Apache-2.0

package importer

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"unicode/utf8"
)

// ParseError is a problem at a position of an import file.
type ParseError struct {
	File   string // file name as given on the command line; may be empty inside a Format
	Offset int64  // 0-based byte offset into the file
	Line   int    // 1-based line
	Column int    // 1-based column, counted in characters (UTF-8 code points) on that line
	Msg    string // what is wrong
	Err    error  // underlying error, if any
}

func (e *ParseError) Error() string {
	name := e.File
	if name == "" {
		name = "<input>"
	}
	return fmt.Sprintf("%s:%d:%d: %s", name, e.Line, e.Column, e.Msg)
}

func (e *ParseError) Unwrap() error { return e.Err }

// errorAt builds a ParseError for byte offset off of data.
func errorAt(data []byte, off int64, err error, format string, args ...any) *ParseError {
	if off < 0 {
		off = 0
	}
	if off > int64(len(data)) {
		off = int64(len(data))
	}
	line, col := lineCol(data, off)
	return &ParseError{Offset: off, Line: line, Column: col, Msg: fmt.Sprintf(format, args...), Err: err}
}

// lineCol converts a byte offset into a 1-based line and 1-based character column.
func lineCol(data []byte, off int64) (line, col int) {
	prefix := data[:off]
	line = bytes.Count(prefix, []byte{'\n'}) + 1
	start := bytes.LastIndexByte(prefix, '\n') + 1
	col = utf8.RuneCount(prefix[start:]) + 1
	return line, col
}

// jsonError positions an encoding/json error met while decoding data starting at base.
// A *json.SyntaxError carries the offset (relative to the decoder input) just after the
// offending byte; an *json.UnmarshalTypeError the offset after the offending value;
// io.ErrUnexpectedEOF points at the end of input.
func jsonError(data []byte, base int64, err error) *ParseError {
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	switch {
	case errors.As(err, &se):
		off := base + se.Offset
		if off > 0 {
			off-- // Offset is after the byte that failed
		}
		return errorAt(data, off, err, "invalid JSON: %v", se)
	case errors.As(err, &te):
		off := base + te.Offset
		if te.Field != "" {
			return errorAt(data, off, err, "field %q: JSON %s where %s expected", te.Field, te.Value, te.Type)
		}
		return errorAt(data, off, err, "JSON %s where %s expected", te.Value, te.Type)
	case errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF):
		return errorAt(data, int64(len(data)), err, "invalid JSON: unexpected end of input")
	}
	return errorAt(data, base, err, "%v", err)
}

// withFile sets the file name on a *ParseError in err (or prefixes other errors with it).
func withFile(name string, err error) error {
	var pe *ParseError
	if errors.As(err, &pe) {
		if pe.File == "" {
			pe.File = name
		}
		return err
	}
	return fmt.Errorf("%s: %w", name, err)
}
