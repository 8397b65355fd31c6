package cfamily

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/onesource-go/onesource/internal/cachedir"
)

// ErrNoTool is wrapped by the toolchain validation functions' errors when the compiler they need
// is not installed (tests skip on it, saying which tool is missing).
var ErrNoTool = errors.New("toolchain not installed")

// ToolTimeout bounds one compiler run.
var ToolTimeout = 3 * time.Minute

// Result describes one successful toolchain run.
type Result struct {
	// Label says what ran, e.g. "clang-16: CUDA -> PTX, sm_80".
	Label string
	// Tool is the path of the compiler.
	Tool string
	// Args are its arguments (file names relative to a temporary directory that no longer
	// exists).
	Args []string
	// Output is the artifact: PTX text, an AMDGPU code object or assembly; nil for checks that
	// produce nothing.
	Output []byte
	// Log is what the compiler printed (warnings).
	Log string
}

// LookPath returns the first of names found on PATH (absolute paths are taken as they are), or
// an error wrapping ErrNoTool that lists them.
func LookPath(names ...string) (string, error) {
	for _, n := range names {
		if p, err := exec.LookPath(n); err == nil {
			return p, nil
		}
	}
	return "", fmt.Errorf("%w: none of %s found", ErrNoTool, strings.Join(names, ", "))
}

// Run compiles src with tool in a fresh temporary directory: src is written there as srcName,
// files (relative path -> content) beside it, and every "{src}", "{out}" and "{dir}" in args
// is replaced by the source's name, "out" and the directory. It returns the content of "out"
// when the compiler wrote it. A failing compiler gives an error carrying its output.
//
// A successful run is kept in internal/cachedir's "tools" cache, keyed by the compiler (its
// path, size and modification time), the arguments and every input byte, and a later Run of
// the same inputs returns it without running the compiler: the same compiler on the same text
// gives the same verdict and output. A failing run is never kept (it runs again, and says why).
// What this saved: the validation phase of a warm `onesource conform` on CUDA and HIP (clang
// to PTX, hipcc to a code object), half of a warm conformance test.
func Run(label, tool string, args []string, srcName, src string, files map[string]string) (*Result, error) {
	entry := toolEntry(label, tool, args, srcName, src, files)
	if entry != "" {
		if b, err := cachedir.Read(entry); err == nil {
			var r Result
			if json.Unmarshal(b, &r) == nil && r.Tool == tool {
				return &r, nil
			}
		}
	}
	res, err := run(label, tool, args, srcName, src, files)
	if err == nil && entry != "" {
		if b, jerr := json.Marshal(res); jerr == nil {
			_ = cachedir.Write(entry, b) // a cache: a failed write only costs the next run
		}
	}
	return res, err
}

// toolEntry is the cache entry of a Run, "" when there is none (caches off, tool unreadable).
func toolEntry(label, tool string, args []string, srcName, src string, files map[string]string) string {
	id := cachedir.Tool(tool)
	if id == "" {
		return ""
	}
	parts := [][]byte{[]byte("cfamily.Run 1"), []byte(label), []byte(id), []byte(srcName), []byte(src)}
	for _, a := range args {
		parts = append(parts, []byte(a))
	}
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		parts = append(parts, []byte(n), []byte(files[n]))
	}
	return cachedir.Entry("tools", cachedir.Key(parts...))
}

func run(label, tool string, args []string, srcName, src string, files map[string]string) (*Result, error) {
	dir, err := os.MkdirTemp("", "onesource-cfamily-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	if err := os.WriteFile(filepath.Join(dir, srcName), []byte(src), 0o644); err != nil {
		return nil, err
	}
	for name, text := range files {
		path := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return nil, err
		}
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			return nil, err
		}
	}
	expanded := make([]string, len(args))
	for i, a := range args {
		a = strings.ReplaceAll(a, "{src}", srcName)
		a = strings.ReplaceAll(a, "{out}", "out")
		expanded[i] = strings.ReplaceAll(a, "{dir}", dir)
	}
	ctx, cancel := context.WithTimeout(context.Background(), ToolTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, tool, expanded...)
	cmd.Dir = dir
	var log bytes.Buffer
	cmd.Stdout, cmd.Stderr = &log, &log
	res := &Result{Label: label, Tool: tool, Args: expanded, Log: log.String()}
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("%s: %s %s: %v\n%s", label, tool, strings.Join(expanded, " "), err, strings.TrimSpace(log.String()))
	}
	res.Log = log.String()
	if data, err := os.ReadFile(filepath.Join(dir, "out")); err == nil {
		res.Output = data
	}
	return res, nil
}

// Numbered returns src with line numbers, for error messages about compiler output.
func Numbered(src string) string {
	var b strings.Builder
	for i, l := range strings.Split(strings.TrimSuffix(src, "\n"), "\n") {
		fmt.Fprintf(&b, "%4d  %s\n", i+1, l)
	}
	return b.String()
}
