// Package cbuild runs the host's C or C++ compiler and keeps what it builds: one entry per
// build, in a directory named by a hash of everything that decides the output, so that a second
// process (or a second start) finds the program or shared object built and does not compile
// again. Host execution of the C-family text (backends/cfamily/host: a program per kernel) and
// the native CPU backend (backends/native: a shared object per kernel) build through it.
//
// # Contract
//
//   - An entry is Root/Key: a directory holding the inputs of the build and its Output. Build
//     returns the entry's Output when it is already there, and never runs the compiler then. A
//     caller puts into its Key everything that decides the bytes of the output: the compiler and
//     its version (Compiler.ID), the flags, the sources, the format of its own protocol.
//   - A build runs in a fresh directory next to the entry (Key.build-*) and is renamed into
//     place only when the compiler succeeded, so a reader sees a whole entry or none; two
//     processes building one key at once leave one of the two. Within a process, builds of one
//     key are serialized.
//   - A failed build's directory is kept as Key.failed (the last failure), so its inputs can be
//     read and compiled by hand; the error (*Error) names it and holds the compiler's output.
//   - Entries (and failed or abandoned builds) not used for MaxAge are removed by the first build
//     a process makes in a Root.
//
// The cache is only an optimisation: Roots follows package internal/cachedir, and with the caches
// off (ONESOURCE_CACHE=off) a per-process temporary directory holds the builds, since a program or
// a shared object has to live in a file to be run or loaded.
package cbuild

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/onesource-go/onesource/internal/cachedir"
)

// ErrNoCompiler is wrapped by FindCompiler's error when none of the candidates is on PATH.
var ErrNoCompiler = errors.New("no compiler found")

// Compiler is a C or C++ compiler found on this machine.
type Compiler struct {
	Path    string // absolute path of the executable
	Clang   bool   // it is clang (by its --version text: a "cc" that is clang counts)
	Version string // the first line of its --version output
}

// ID identifies the compiler in cache keys: its path and its version line, so that an upgraded
// compiler at the same path builds anew.
func (c *Compiler) ID() string { return c.Path + "\x00" + c.Version }

// Name is the compiler's file name and version, for messages ("clang-16 (Debian clang version
// 16.0.6)").
func (c *Compiler) Name() string {
	return fmt.Sprintf("%s (%s)", filepath.Base(c.Path), c.Version)
}

var compilers sync.Map // path -> *Compiler

// FindCompiler returns the first of names found on PATH (a name may be a path), asking it for
// its version once per process. None found is an error wrapping ErrNoCompiler that lists them.
func FindCompiler(names ...string) (*Compiler, error) {
	for _, n := range names {
		p, err := exec.LookPath(n)
		if err != nil {
			continue
		}
		if abs, err := filepath.Abs(p); err == nil {
			p = abs
		}
		if c, ok := compilers.Load(p); ok {
			return c.(*Compiler), nil
		}
		c := &Compiler{Path: p}
		out, err := exec.Command(p, "--version").Output()
		if err == nil {
			c.Version = strings.TrimSpace(strings.SplitN(string(out), "\n", 2)[0])
		}
		c.Clang = strings.Contains(filepath.Base(p), "clang") || strings.Contains(string(out), "clang")
		compilers.Store(p, c)
		return c, nil
	}
	return nil, fmt.Errorf("%w: none of %s on PATH", ErrNoCompiler, strings.Join(names, ", "))
}

// Key hashes the parts (each length-prefixed, so that no two lists of parts collide) into an
// entry name: 32 hex digits.
func Key(parts ...string) string {
	h := sha256.New()
	for _, p := range parts {
		fmt.Fprintf(h, "%d\x00", len(p))
		h.Write([]byte(p))
	}
	return hex.EncodeToString(h.Sum(nil))[:32]
}

// Root is the cache directory of builds called name: internal/cachedir's directory of that name,
// else (the caches off, no user cache directory) a temporary directory of this process's own.
func Root(name string) string {
	if d := cachedir.Dir(name); d != "" {
		return d
	}
	return tempRoot(name)
}

var (
	tempMu    sync.Mutex
	tempRoots = map[string]string{}
)

func tempRoot(name string) string {
	tempMu.Lock()
	defer tempMu.Unlock()
	if d, ok := tempRoots[name]; ok {
		return d
	}
	d, err := os.MkdirTemp("", "onesource-"+name+"-")
	if err != nil {
		d = filepath.Join(os.TempDir(), "onesource-"+name)
	}
	tempRoots[name] = d
	return d
}

// Stats counts a kind of build: how many a process compiled and how many it found built.
type Stats struct{ built, cached atomic.Int64 }

// Counts returns the builds compiled and the builds found in the cache.
func (s *Stats) Counts() (built, cached int) { return int(s.built.Load()), int(s.cached.Load()) }

// Job is one build.
type Job struct {
	// Root is the cache directory (created when missing). Fallback, when not empty, is used
	// instead when Root cannot be created (a user cache directory that is not writable).
	Root, Fallback string
	// Key names the entry (Key's result); Output is the artifact's file name in it.
	Key, Output string
	// Write puts the build's inputs into dir (a fresh directory).
	Write func(dir string) error
	// Args are the compiler's arguments; it runs in the build directory.
	Compiler *Compiler
	Args     []string
	// Stats, when not nil, counts the build.
	Stats *Stats
}

// Error is a build the compiler failed: Dir holds the build's inputs (Key.failed), Output the
// compiler's messages (with the build directory's path replaced by Dir).
type Error struct {
	Dir    string
	Output string
	Err    error
}

// Error implements error.
func (e *Error) Error() string {
	return fmt.Sprintf("compiling in %s: %v\n%s", e.Dir, e.Err, e.Output)
}

// Unwrap returns the compiler's exit error.
func (e *Error) Unwrap() error { return e.Err }

var (
	buildMu    sync.Mutex
	buildLocks = map[string]*sync.Mutex{}
	pruned     sync.Map // root -> true
)

func lockKey(key string) func() {
	buildMu.Lock()
	m, ok := buildLocks[key]
	if !ok {
		m = new(sync.Mutex)
		buildLocks[key] = m
	}
	buildMu.Unlock()
	m.Lock()
	return m.Unlock
}

// MaxAge is how long an entry that no Build has used is kept.
var MaxAge = 14 * 24 * time.Hour

// Build returns the path of the job's Output, building it when the cache does not hold it (see
// the package documentation). A compiler failure is an *Error.
func Build(j Job) (string, error) {
	root := j.Root
	if err := os.MkdirAll(root, 0o755); err != nil {
		if j.Fallback == "" {
			return "", fmt.Errorf("cache directory: %w", err)
		}
		root = j.Fallback
	}
	final := filepath.Join(root, j.Key)
	out := filepath.Join(final, j.Output)
	if fi, err := os.Stat(out); err == nil && fi.Mode().IsRegular() {
		now := time.Now()
		_ = os.Chtimes(final, now, now) // recently used: kept by prune
		if j.Stats != nil {
			j.Stats.cached.Add(1)
		}
		return out, nil
	}
	unlock := lockKey(final)
	defer unlock()
	if fi, err := os.Stat(out); err == nil && fi.Mode().IsRegular() {
		if j.Stats != nil {
			j.Stats.cached.Add(1)
		}
		return out, nil
	}
	if err := os.MkdirAll(root, 0o755); err != nil {
		return "", fmt.Errorf("cache directory: %w", err)
	}
	tmp, err := os.MkdirTemp(root, j.Key+".build-")
	if err != nil {
		return "", fmt.Errorf("cache directory: %w", err)
	}
	if err := j.Write(tmp); err != nil {
		os.RemoveAll(tmp)
		return "", fmt.Errorf("writing the build files: %w", err)
	}
	cmd := exec.Command(j.Compiler.Path, j.Args...)
	cmd.Dir = tmp
	msg, err := cmd.CombinedOutput()
	if err != nil {
		failed := filepath.Join(root, j.Key+".failed")
		os.RemoveAll(failed)
		dir := tmp
		if os.Rename(tmp, failed) == nil {
			dir = failed
		}
		return "", &Error{Dir: dir, Output: strings.ReplaceAll(string(msg), tmp, dir), Err: err}
	}
	if j.Stats != nil {
		j.Stats.built.Add(1)
	}
	if _, done := pruned.LoadOrStore(root, true); !done {
		prune(root, j.Key)
	}
	if err := os.Rename(tmp, final); err != nil {
		// Another process built the same key first: use that one.
		os.RemoveAll(tmp)
		if fi, err2 := os.Stat(out); err2 != nil || !fi.Mode().IsRegular() {
			return "", fmt.Errorf("installing the build: %w", err)
		}
	}
	return out, nil
}

var entryName = regexp.MustCompile(`^[0-9a-f]{32}(\.|$)`)

// prune removes entries (builds, failed builds, abandoned build directories) of root not used for
// MaxAge, except those of key.
func prune(root, key string) {
	entries, err := os.ReadDir(root)
	if err != nil {
		return
	}
	old := time.Now().Add(-MaxAge)
	for _, e := range entries {
		if !e.IsDir() || strings.HasPrefix(e.Name(), key) || !entryName.MatchString(e.Name()) {
			continue
		}
		if fi, err := e.Info(); err == nil && fi.ModTime().Before(old) {
			os.RemoveAll(filepath.Join(root, e.Name()))
		}
	}
}
