package main

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"strings"
	"text/tabwriter"

	"github.com/onesource-go/onesource/gguf"
	"github.com/onesource-go/onesource/internal/atomicfile"
	"github.com/onesource-go/onesource/oracle"
)

func init() { register("gguf", "inspect GGUF files: ls FILE | dump FILE TENSOR -o OUT.f32", runGGUF) }

const ggufUsage = `usage:
  onesource gguf ls FILE                      list the tensors (name, type, shape, offset)
  onesource gguf dump FILE TENSOR -o OUT.f32  write TENSOR dequantized by the oracle as little-endian f32
`

// runGGUF is the gguf subcommand. Exit status: 0 success, 1 error (bad file, unknown tensor, write
// failure), 2 usage error.
func runGGUF(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, ggufUsage)
		return 2
	}
	switch args[0] {
	case "ls":
		if len(args) != 2 {
			fmt.Fprint(stderr, "onesource gguf ls: want exactly one FILE\n"+ggufUsage)
			return 2
		}
		return ggufFail(stderr, "ls", ggufList(args[1], stdout))
	case "dump":
		pos, out, err := parseDumpArgs(args[1:])
		if err != nil {
			fmt.Fprintf(stderr, "onesource gguf dump: %v\n%s", err, ggufUsage)
			return 2
		}
		return ggufFail(stderr, "dump", ggufDump(pos[0], pos[1], out, stdout))
	case "-h", "--help", "help":
		fmt.Fprint(stdout, ggufUsage)
		return 0
	}
	fmt.Fprintf(stderr, "onesource gguf: unknown subcommand %q\n%s", args[0], ggufUsage)
	return 2
}

func ggufFail(stderr io.Writer, sub string, err error) int {
	if err == nil {
		return 0
	}
	fmt.Fprintf(stderr, "onesource gguf %s: %v\n", sub, err)
	return 1
}

// parseDumpArgs takes FILE TENSOR and -o OUT in any order (-o OUT, -o=OUT, --o ...; "--" ends
// the options).
func parseDumpArgs(args []string) (pos []string, out string, err error) {
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--":
			pos = append(pos, args[i+1:]...)
			i = len(args)
		case a == "-o" || a == "--o":
			if i+1 >= len(args) {
				return nil, "", errors.New("-o needs a file name")
			}
			out = args[i+1]
			i++
		case strings.HasPrefix(a, "-o=") || strings.HasPrefix(a, "--o="):
			out = a[strings.Index(a, "=")+1:]
		case len(a) > 1 && a[0] == '-':
			return nil, "", fmt.Errorf("unknown flag %s", a)
		default:
			pos = append(pos, a)
		}
	}
	if len(pos) != 2 {
		return nil, "", fmt.Errorf("want FILE and TENSOR, got %d arguments", len(pos))
	}
	if out == "" {
		return nil, "", errors.New("missing -o OUT.f32")
	}
	return pos, out, nil
}

// ggufShape formats dims in ggml order (innermost first), e.g. 4096x32000 ("scalar" for none).
func ggufShape(dims []uint64) string {
	if len(dims) == 0 {
		return "scalar"
	}
	parts := make([]string, len(dims))
	for i, d := range dims {
		parts[i] = fmt.Sprint(d)
	}
	return strings.Join(parts, "x")
}

func ggufList(path string, stdout io.Writer) error {
	f, err := gguf.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	arch := ""
	if v, ok := f.Lookup("general.architecture"); ok {
		if s, ok := v.Str(); ok {
			arch = ", architecture " + s
		}
	}
	fmt.Fprintf(stdout, "%s: GGUF v%d%s, %d tensors, %d metadata keys, alignment %d, data at byte %d\n",
		path, f.Version, arch, len(f.Tensors), len(f.Metadata), f.Alignment, f.DataOffset)
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tTYPE\tSHAPE\tELEMENTS\tBYTES\tOFFSET")
	for i := range f.Tensors {
		t := &f.Tensors[i]
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%d\t%d\n", t.Name, t.Type, ggufShape(t.Dims), t.NumElements(), t.Size, uint64(f.DataOffset)+t.Offset)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(stdout, "(SHAPE in ggml order, innermost first; OFFSET is the absolute byte offset in the file)")
	return nil
}

func ggufDump(path, name, out string, stdout io.Writer) error {
	// The output may not be the input (the same file, also through a link): writing it would
	// truncate the memory-mapped file being read. Checked before the file is even opened.
	if err := atomicfile.CheckOutput(out, path); err != nil {
		return err
	}
	f, err := gguf.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	t, ok := f.Tensor(name)
	if !ok {
		return fmt.Errorf("%s: no tensor %q (%d tensors; see onesource gguf ls)", path, name, len(f.Tensors))
	}
	if len(t.Dims) > 0 && t.Dims[0] > math.MaxInt32 {
		return fmt.Errorf("tensor %q: rows of %d values are too long", name, t.Dims[0])
	}
	// The output rule (package atomicfile): a temporary file renamed into place, so a failure
	// leaves any existing output as it was; a FIFO or a device is written in place.
	o, err := atomicfile.CreateOutput(out, path)
	if err != nil {
		return err
	}
	if err := writeDequantized(o, t, name); err != nil {
		o.Abort()
		return err
	}
	if err := o.Commit(); err != nil {
		return err
	}
	// Said only once the output is in place.
	fmt.Fprintf(stdout, "%s: %s %s, %d values -> %s (%d bytes, little-endian f32)\n", name, t.Type, ggufShape(t.Dims), t.NumElements(), out, 4*t.NumElements())
	return nil
}

// writeDequantized writes tensor t dequantized by the oracle to o as little-endian f32, row by
// row.
func writeDequantized(o io.Writer, t *gguf.Tensor, name string) error {
	data := t.Data()
	rowBytes := t.RowSize()
	rowLen := uint64(1)
	if len(t.Dims) > 0 {
		rowLen = t.Dims[0]
	}
	w := bufio.NewWriterSize(o, 1<<20)
	row := make([]float32, rowLen)
	buf := make([]byte, 4*rowLen)
	if rowBytes > 0 {
		for off := uint64(0); off < uint64(len(data)); off += rowBytes {
			if err := oracle.Dequantize(t.Type, data[off:off+rowBytes], row); err != nil {
				return fmt.Errorf("tensor %q: %w", name, err)
			}
			for i, v := range row {
				binary.LittleEndian.PutUint32(buf[4*i:], math.Float32bits(v))
			}
			if _, err := w.Write(buf); err != nil {
				return err
			}
		}
	}
	return w.Flush()
}
