// SPDX-License-Identifier: Apache-2.0

// Package jsonkit is runagain's one JSON toolkit, built on the jsontext package of
// github.com/go-json-experiment/json (the proposed encoding/json/jsontext): validation, the
// RFC 8785 canonical form, and a streaming scanner that yields each token with its byte range in
// the input, without building a tree or copying strings.
//
// Every function accepts what encoding/json accepts (RFC 8259 grammar; invalid UTF-8 and
// duplicate object names are let through, as encoding/json.Valid does), so that switching a
// caller to this package changes no verdict on its inputs. Nesting is limited to 10,000 levels
// (jsontext's and encoding/json's limit).
package jsonkit // import "github.com/runagain/runagain/internal/jsonkit"

import (
	"bytes"
	"errors"
	"io"
	"sync"
	"unsafe"

	"github.com/go-json-experiment/json/jsontext"
)

// lenient are the decoding options that match encoding/json's acceptance.
var lenient = []jsontext.Options{jsontext.AllowInvalidUTF8(true), jsontext.AllowDuplicateNames(true)}

// canonicalOpts: RFC 8785 (members sorted by UTF-16 code units, minimal string escapes, floats
// in ECMAScript form), lenient as above, with integers kept as written (see Canonical).
var canonicalOpts = []jsontext.Options{jsontext.AllowInvalidUTF8(true), jsontext.AllowDuplicateNames(true), jsontext.CanonicalizeRawInts(false)}

// Valid reports whether b is exactly one JSON value, optionally surrounded by white space; it
// agrees with encoding/json.Valid.
func Valid(b []byte) bool {
	return jsontext.Value(b).IsValid(lenient...)
}

// ValidString is Valid for a string; it does not copy s.
func ValidString(s string) bool {
	return Valid(unsafe.Slice(unsafe.StringData(s), len(s)))
}

// Canonical appends to dst the canonical form of the JSON value src and returns it: RFC 8785
// (JSON Canonicalization Scheme) through jsontext.Value.Canonicalize: no white space, object
// members sorted by their names' UTF-16 code units, strings in their minimal escaping, floating
// point numbers in the shortest ECMAScript form (1.0 -> 1, 1e2 -> 100). Unlike RFC 8785,
// integers are kept as written, so that ids above 2^53 do not collide. An error is returned for
// text that is not one valid JSON value (dst is then returned unchanged).
func Canonical(dst []byte, src []byte) ([]byte, error) {
	n := len(dst)
	v := jsontext.Value(append(dst, src...))
	w := v[n:]
	if err := w.Canonicalize(canonicalOpts...); err != nil {
		return dst[:n], err
	}
	return append(v[:n], w...), nil // w is v[n:] itself unless Canonicalize had to grow it
}

// CanonicalString is Canonical for a string.
func CanonicalString(dst []byte, src string) ([]byte, error) {
	return Canonical(dst, unsafe.Slice(unsafe.StringData(src), len(src)))
}

// Kind is a token's kind: '{', '}', '[', ']', '"' (string), '0' (number), 't', 'f', 'n'.
type Kind = jsontext.Kind

// Token is one token of the input: its kind and its byte range [Start, End) in the input given to
// Reset (a string's range includes its quotes). Name marks an object member name; Member marks a
// value directly held by an object (the value after a name).
type Token struct {
	Kind       Kind
	Start, End int
	Name       bool
	Member     bool
}

// ErrTrailing is returned by Next when the input holds more than one JSON value.
var ErrTrailing = errors.New("jsonkit: data after the top-level value")

// Scanner reads the tokens of one JSON value, validating as it goes. It keeps no copy of the
// input and allocates nothing per token. Get one with NewScanner (or the pooled GetScanner) and
// Reset it on each input; a Scanner is not safe for concurrent use.
type Scanner struct {
	buf  bytes.Buffer
	dec  jsontext.Decoder
	src  []byte
	done bool // the top-level value is complete
}

// NewScanner returns a Scanner positioned on src.
func NewScanner(src []byte) *Scanner {
	s := new(Scanner)
	s.Reset(src)
	return s
}

var scannerPool = sync.Pool{New: func() any { return new(Scanner) }}

// GetScanner returns a pooled Scanner positioned on src; give it back with PutScanner.
func GetScanner(src []byte) *Scanner {
	s := scannerPool.Get().(*Scanner)
	s.Reset(src)
	return s
}

// GetScannerString is GetScanner for a string; it does not copy s, which must outlive the use
// of the Scanner.
func GetScannerString(src string) *Scanner {
	return GetScanner(unsafe.Slice(unsafe.StringData(src), len(src)))
}

// PutScanner returns s to the pool; s must not be used afterwards.
func PutScanner(s *Scanner) {
	s.src = nil
	s.buf = bytes.Buffer{}
	s.dec.Reset(&s.buf, lenient...) // drop the reference to the input
	scannerPool.Put(s)
}

// Reset positions s at the start of src. The Decoder parses src in place (a bytes.Buffer input
// is not copied by jsontext); src is never written.
func (s *Scanner) Reset(src []byte) {
	s.src = src
	s.buf = *bytes.NewBuffer(src)
	s.dec.Reset(&s.buf, lenient...)
	s.done = false
}

// Offset is the input offset just after the last token returned.
func (s *Scanner) Offset() int { return int(s.dec.InputOffset()) }

// Depth is the number of objects and arrays open around the next token.
func (s *Scanner) Depth() int { return s.dec.StackDepth() }

// PeekKind returns the kind of the next token (0 at the end or on an error, which Next returns).
func (s *Scanner) PeekKind() Kind {
	if s.done {
		return 0
	}
	return s.dec.PeekKind()
}

// position reports whether the next token is an object member name or an object member value.
func (s *Scanner) position() (name, member bool) {
	d := s.dec.StackDepth()
	if d == 0 {
		return false, false
	}
	k, n := s.dec.StackIndex(d)
	if k != '{' {
		return false, false
	}
	return n%2 == 0, n%2 == 1
}

// Next returns the next token. After the last token of the top-level value it returns io.EOF, or
// ErrTrailing when anything but white space follows; a syntax error is returned as jsontext
// reports it (with its offset).
func (s *Scanner) Next() (Token, error) {
	if s.done {
		return Token{}, s.end()
	}
	name, member := s.position()
	switch k := s.dec.PeekKind(); k {
	case '{', '[', '}', ']':
		if _, err := s.dec.ReadToken(); err != nil {
			return Token{}, err
		}
		end := s.Offset()
		s.done = s.dec.StackDepth() == 0
		return Token{Kind: k, Start: end - 1, End: end}, nil
	case 0:
		_, err := s.dec.ReadToken()
		if errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF // no value at all
		}
		return Token{}, err
	default:
		v, err := s.dec.ReadValue()
		if err != nil {
			return Token{}, err
		}
		end := s.Offset()
		s.done = s.dec.StackDepth() == 0
		return Token{Kind: k, Start: end - len(v), End: end, Name: name, Member: member}, nil
	}
}

// Value reads the whole next value (an object or array with everything in it, or one scalar) and
// returns its kind and byte range; it is Next for scalars.
func (s *Scanner) Value() (Token, error) {
	if s.done {
		return Token{}, s.end()
	}
	name, member := s.position()
	k := s.dec.PeekKind()
	v, err := s.dec.ReadValue()
	if err != nil {
		return Token{}, err
	}
	end := s.Offset()
	s.done = s.dec.StackDepth() == 0
	return Token{Kind: k, Start: end - len(v), End: end, Name: name, Member: member}, nil
}

func (s *Scanner) end() error {
	if _, err := s.dec.ReadToken(); !errors.Is(err, io.EOF) {
		if err == nil {
			return ErrTrailing
		}
		return err
	}
	return io.EOF
}
