//go:build unix

package atomicfile

import (
	"errors"
	"os"
	"syscall"
)

// lockDir takes an exclusive advisory lock (flock) on the directory dir, serializing the
// read-check-write of every Save in it across processes; unlock releases it. A file system
// without flock (some network file systems) is used unlocked: ok is false then.
func lockDir(dir string) (unlock func(), ok bool, err error) {
	f, err := os.Open(dir)
	if err != nil {
		return nil, false, err
	}
	for {
		err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX)
		if !errors.Is(err, syscall.EINTR) {
			break
		}
	}
	if err != nil {
		f.Close()
		if errors.Is(err, syscall.ENOLCK) || errors.Is(err, syscall.EOPNOTSUPP) || errors.Is(err, syscall.ENOSYS) || errors.Is(err, syscall.EINVAL) {
			return func() {}, false, nil
		}
		return nil, false, err
	}
	return func() {
		syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		f.Close()
	}, true, nil
}
