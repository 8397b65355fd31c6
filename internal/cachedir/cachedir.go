// Package cachedir is where onesource keeps what it compiled, so that a program's second start
// does not pay its first start's compiles: Vulkan pipeline caches (backends/vulkan), host-compiled
// programs (backends/cfamily/host), runtime-compiled CUDA/HIP code.
//
// The contract: every persistent cache lives under one root, $ONESOURCE_CACHE when it is set, else
// os.UserCacheDir()/onesource; ONESOURCE_CACHE=off turns every persistent cache off (Dir returns
// "" and callers compile as if nothing were kept). A cache is only ever an optimisation: an entry
// that is missing, unreadable, corrupt or written by another device or compiler is ignored (its
// caller says so once, as a warning) and never trusted blindly; failing to write one is never
// fatal. Entries are written through a temporary file renamed into place, so a reader sees a
// whole entry or none, and two processes writing one entry at once leave one of the two.
package cachedir

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// Env is the environment variable that moves (or, set to Off, turns off) every persistent cache.
const Env = "ONESOURCE_CACHE"

// Off is the value of Env that turns the persistent caches off.
const Off = "off"

// Root is the caches' root directory, "" when the caches are off or no user cache directory is
// known (no $HOME).
func Root() string {
	if v := os.Getenv(Env); v != "" {
		if v == Off {
			return ""
		}
		return v
	}
	d, err := os.UserCacheDir()
	if err != nil {
		return ""
	}
	return filepath.Join(d, "onesource")
}

// Dir is the directory of one cache under Root ("vulkan", "host"), "" when the caches are off.
// It is not created.
func Dir(name string) string {
	r := Root()
	if r == "" {
		return ""
	}
	return filepath.Join(r, name)
}

// magic starts every sealed entry: "onesrc1" and a NUL.
var magic = [8]byte{'o', 'n', 'e', 's', 'r', 'c', '1', 0}

// ErrCorrupt is wrapped by Open's error for an entry whose seal does not match its content.
var ErrCorrupt = errors.New("corrupt cache entry")

// Seal returns data framed for Write and Open: the magic, the SHA-256 of data, data. A torn or
// edited entry then fails Open instead of reaching a driver.
func Seal(data []byte) []byte {
	sum := sha256.Sum256(data)
	out := make([]byte, 0, len(magic)+len(sum)+len(data))
	out = append(out, magic[:]...)
	out = append(out, sum[:]...)
	return append(out, data...)
}

// Unseal checks and strips Seal's frame.
func Unseal(entry []byte) ([]byte, error) {
	n := len(magic) + sha256.Size
	if len(entry) < n || [8]byte(entry[:8]) != magic {
		return nil, fmt.Errorf("%w: no onesource cache header", ErrCorrupt)
	}
	data := entry[n:]
	if sha256.Sum256(data) != [32]byte(entry[8:n]) {
		return nil, fmt.Errorf("%w: its checksum does not match its %d bytes", ErrCorrupt, len(data))
	}
	return data, nil
}

// Read returns the unsealed content of the entry at path. A missing entry is an error wrapping
// os.ErrNotExist; a damaged one wraps ErrCorrupt.
func Read(path string) ([]byte, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return Unseal(b)
}

// Write seals data and stores it at path, creating the directory, through a temporary file in
// the same directory renamed over path.
func Write(path string, data []byte) error {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	_, err = f.Write(Seal(data))
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		os.Remove(tmp)
	}
	return err
}

// Tool identifies an executable in a cache key: its resolved path, size and modification time,
// so that an upgraded compiler misses the entries of the old one. "" when it cannot be read.
func Tool(path string) string {
	if p, err := filepath.EvalSymlinks(path); err == nil {
		path = p
	}
	fi, err := os.Stat(path)
	if err != nil {
		return ""
	}
	return fmt.Sprintf("%s\x00%d\x00%d", path, fi.Size(), fi.ModTime().UnixNano())
}

// Key hashes the parts of a cache key (each length-prefixed, so no two lists collide) to a
// hex name.
func Key(parts ...[]byte) string {
	h := sha256.New()
	for _, p := range parts {
		fmt.Fprintf(h, "%d:", len(p))
		h.Write(p)
	}
	return fmt.Sprintf("%x", h.Sum(nil))
}

// Entry is the path of entry key of cache name, "" when the caches are off.
func Entry(name, key string) string {
	d := Dir(name)
	if d == "" || len(key) < 2 {
		return ""
	}
	return filepath.Join(d, key[:2], key)
}
