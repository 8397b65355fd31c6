package tuning

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/onesource-go/onesource/internal/atomicfile"
)

// FormatName and FormatVersion are the header every tuning cache file starts with.
const (
	FormatName    = "onesource-tuning"
	FormatVersion = 1
)

// ErrChanged is returned (wrapped) by Save when the file changed on disk since it was read.
var ErrChanged = errors.New("tuning: file changed on disk since it was loaded")

// file is the on-disk form. encoding/json writes struct fields in declaration order and entries
// are sorted by key, so the output is stable and diffs line by line.
type file struct {
	Format  string  `json:"format"`
	Version int     `json:"version"`
	Entries []Entry `json:"entries"`
}

// Marshal returns the file form of c: indented JSON with the header
// {"format": "onesource-tuning", "version": 1} followed by the entries sorted by (cell, backend,
// device, driver, twin_hash), and a trailing newline. The same cache always gives the same bytes.
func (c *Cache) Marshal() ([]byte, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.marshal()
}

func (c *Cache) marshal() ([]byte, error) {
	f := file{Format: FormatName, Version: FormatVersion, Entries: c.sorted()}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(f); err != nil { // Encode ends with a newline
		return nil, fmt.Errorf("tuning: encode: %v", err)
	}
	return buf.Bytes(), nil
}

// lineCol turns a byte offset into a 1-based line and column.
func lineCol(b []byte, off int64) (int, int) {
	if off < 0 {
		off = 0
	}
	if off > int64(len(b)) {
		off = int64(len(b))
	}
	pre := b[:off]
	line := bytes.Count(pre, []byte("\n")) + 1
	col := int(off) - bytes.LastIndexByte(pre, '\n')
	return line, col
}

// Parse reads a cache from the file form; name (usually the file's path) is used in errors. It
// rejects malformed JSON, values of the wrong type and unknown fields (corrupt, with
// FILE:LINE:COL where the decoder gives a position), a missing or different format name (a
// foreign file, such as a registry file), a missing or newer version, an entry that fails
// Entry.Validate (naming the entry by index and cell), and two entries with one key. The
// returned cache is bound to no file (see Load).
func Parse(name string, b []byte) (*Cache, error) {
	var hdr struct {
		Format  *string `json:"format"`
		Version *int    `json:"version"`
	}
	if err := json.Unmarshal(b, &hdr); err != nil {
		return nil, syntaxErr(name, b, err)
	}
	if hdr.Format == nil || *hdr.Format != FormatName {
		got := "no format field"
		if hdr.Format != nil {
			got = fmt.Sprintf("format %q", *hdr.Format)
		}
		return nil, fmt.Errorf("%s: not a onesource tuning cache (%s, want %q)", name, got, FormatName)
	}
	if hdr.Version == nil || *hdr.Version < 1 {
		return nil, fmt.Errorf("%s: tuning cache has no valid version", name)
	}
	if *hdr.Version > FormatVersion {
		return nil, fmt.Errorf("%s: tuning cache format version %d is newer than this onesource reads (%d): upgrade onesource", name, *hdr.Version, FormatVersion)
	}
	var f file
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&f); err != nil {
		return nil, syntaxErr(name, b, err)
	}
	if dec.More() { // cannot happen after json.Unmarshal accepted b; kept as a guard
		line, col := lineCol(b, dec.InputOffset())
		return nil, fmt.Errorf("%s:%d:%d: corrupt tuning cache: data after the end", name, line, col)
	}
	c := New()
	for i, e := range f.Entries {
		if err := e.Validate(); err != nil {
			return nil, fmt.Errorf("%s: entry %d (%s): %v", name, i, e.Cell, err)
		}
		if _, dup := c.entries[e.Key]; dup {
			return nil, fmt.Errorf("%s: entry %d (%s): duplicate key %s", name, i, e.Cell, e.Key)
		}
		c.entries[e.Key] = e.clone()
	}
	return c, nil
}

func syntaxErr(name string, b []byte, err error) error {
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	switch {
	case errors.As(err, &se):
		line, col := lineCol(b, syntaxPos(b, se.Offset))
		return fmt.Errorf("%s:%d:%d: corrupt tuning cache: %v", name, line, col, err)
	case errors.As(err, &te):
		line, col := lineCol(b, valueStart(b, te.Offset))
		return fmt.Errorf("%s:%d:%d: corrupt tuning cache: %v", name, line, col, err)
	case errors.Is(err, io.ErrUnexpectedEOF):
		return fmt.Errorf("%s: corrupt tuning cache: truncated (%v)", name, err)
	}
	return fmt.Errorf("%s: corrupt tuning cache: %v", name, err)
}

// syntaxPos returns the offset of the byte a *json.SyntaxError is about: the decoder reports the
// offset just after it (when the input ended too soon, that byte is the last one).
func syntaxPos(b []byte, off int64) int64 {
	if off <= 0 || off > int64(len(b)) {
		return off
	}
	return off - 1
}

// valueStart returns the offset of the start of the value a *json.UnmarshalTypeError is about:
// the decoder reports the offset just after the opening bracket of an object or array, and just
// after the end of a string, number or literal.
func valueStart(b []byte, off int64) int64 {
	if off <= 0 || off > int64(len(b)) {
		return off
	}
	i := off - 1
	if b[i] == '"' {
		for j := i - 1; j >= 0; j-- {
			if b[j] != '"' {
				continue
			}
			n := 0 // backslashes before this quote: an odd count escapes it
			for k := j - 1; k >= 0 && b[k] == '\\'; k-- {
				n++
			}
			if n%2 == 0 {
				return j
			}
		}
		return i
	}
	// A number or literal: back to its first byte. (At an opening bracket this stops at once.)
	for i > 0 && literalByte(b[i-1]) {
		i--
	}
	return i
}

func literalByte(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '.' || c == '+' || c == '-'
}

// Load reads the cache file at path; the file must exist. The cache is bound to path, and Save
// later refuses to overwrite the file if it changed on disk in between.
func Load(path string) (*Cache, error) {
	b, bind, err := atomicfile.Read(path)
	if err != nil {
		return nil, fmt.Errorf("tuning: %v", err)
	}
	c, err := Parse(path, b)
	if err != nil {
		return nil, err
	}
	c.file = bind
	return c, nil
}

// Open is Load, except that a file that does not exist yields an empty cache bound to path (Save
// then creates it, refusing if someone else created it first).
func Open(path string) (*Cache, error) {
	c, err := Load(path)
	if err == nil {
		return c, nil
	}
	if atomicfile.NotExist(path) {
		c = New()
		c.file.Path = path
		return c, nil
	}
	return nil, err
}

// Path returns the file the cache was read from or last saved to ("" for New and Parse).
func (c *Cache) Path() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.file.Path
}

// Save writes the cache to path ("" means the file it is bound to) atomically: a temporary file
// in the same directory, fsync, rename over path, fsync of the directory, so a reader sees the old
// file or the new one, never a part. It refuses (an error wrapping ErrChanged) to overwrite a
// file whose content changed, or that was removed or created, since Load/Open/Save, and refuses
// to overwrite an existing file this cache was not read from. After a successful Save the cache is
// bound to path.
func (c *Cache) Save(path string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	data, err := c.marshal()
	if err != nil {
		return err
	}
	return c.file.Save(path, data, "tuning", ErrChanged)
}
