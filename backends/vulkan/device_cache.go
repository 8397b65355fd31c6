package vulkan

// The persistent pipeline cache: a Device loads its VkPipelineCache from a file when it opens
// and saves it when it closes (or on SavePipelineCache), so a program's second start reuses
// the pipelines its first start compiled. Where the file lives and what is trusted:
//
//   - The file is <dir>/pipelines-<key>.bin, dir being Options.PipelineCacheDir or
//     internal/cachedir's "vulkan" directory ($ONESOURCE_CACHE, else the user cache directory;
//     ONESOURCE_CACHE=off or Options.NoPipelineCache keeps none). The key hashes what makes a
//     driver's cache data valid: the device's pipelineCacheUUID, vendor and device ids, driver
//     version, driver name and info, and whether robustBufferAccess is on.
//   - The file is sealed (internal/cachedir: a checksum over the bytes), and the driver's own
//     header inside is checked against the device (header version one, vendor, device,
//     pipelineCacheUUID) before the driver sees it. A corrupt, truncated or foreign file is
//     ignored with a warning (Options.Warn) and replaced at the next save; a driver that still
//     refuses the data is given an empty cache instead. Never fatal.
//   - Stats counts the pipelines created and, where the driver reports pipeline creation
//     feedback (Vulkan 1.3), how many of them were hits in the loaded cache.
//
// Mesa's lavapipe keeps no pipelines in a VkPipelineCache (its data is the 32-byte header
// alone): there, Mesa's own shader cache ($XDG_CACHE_HOME/mesa_shader_cache) is what a second
// start reuses, and the counts show hits only on drivers that keep pipelines.

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"unsafe"

	"github.com/onesource-go/onesource/internal/cachedir"
)

// PipelineCacheHeaderSize is the size of VkPipelineCacheHeaderVersionOne: pipeline cache data
// no longer than this holds no pipelines.
const PipelineCacheHeaderSize = pipelineCacheHeader

const pipelineCacheHeader = 32

// cacheFile is the device's pipeline cache file, "" for none.
func cacheFile(opts Options, pd *physDevice, robust bool) string {
	if opts.NoPipelineCache {
		return ""
	}
	dir := opts.PipelineCacheDir
	if dir == "" {
		if dir = cachedir.Dir("vulkan"); dir == "" {
			return ""
		}
	}
	h := sha256.New()
	h.Write(pd.props.PipelineCacheUUID[:])
	fmt.Fprintf(h, "\x00%d\x00%d\x00%d\x00%s\x00%s\x00%v", pd.props.VendorID, pd.props.DeviceID, pd.props.DriverVersion,
		pd.info.DriverName, pd.info.DriverInfo, robust)
	return filepath.Join(dir, "pipelines-"+hex.EncodeToString(h.Sum(nil))[:24]+".bin")
}

// checkCacheHeader says why data is not a pipeline cache of this device, or nil.
func checkCacheHeader(data []byte, pd *physDevice) error {
	if len(data) < pipelineCacheHeader {
		return fmt.Errorf("%d bytes, shorter than a pipeline cache header", len(data))
	}
	le := binary.LittleEndian
	size, version := le.Uint32(data[0:]), le.Uint32(data[4:])
	vendor, device := le.Uint32(data[8:]), le.Uint32(data[12:])
	switch {
	case size < pipelineCacheHeader || int(size) > len(data):
		return fmt.Errorf("header size %d", size)
	case version != vkPipelineCacheHeaderVersionOne:
		return fmt.Errorf("header version %d", version)
	case vendor != pd.props.VendorID || device != pd.props.DeviceID:
		return fmt.Errorf("written for vendor %#x device %#x, this is %#x %#x", vendor, device, pd.props.VendorID, pd.props.DeviceID)
	case [16]byte(data[16:32]) != pd.props.PipelineCacheUUID:
		return fmt.Errorf("written for another pipelineCacheUUID")
	}
	return nil
}

// warn reports a warning through opts.Warn, or the standard logger.
func (d *Device) warn(format string, args ...any) {
	msg := fmt.Sprintf("vulkan: "+format, args...)
	if d.warnf != nil {
		d.warnf(msg)
		return
	}
	log.Print("onesource: " + msg)
}

// createPipelineCache creates d.cache, from the cache file when it holds a valid cache.
func (d *Device) createPipelineCache() error {
	var data []byte
	if d.cachePath != "" {
		b, err := cachedir.Read(d.cachePath)
		switch {
		case errors.Is(err, os.ErrNotExist):
		case err != nil:
			d.warn("pipeline cache %s ignored: %v", d.cachePath, err)
		default:
			if why := checkCacheHeader(b, d.pd); why != nil {
				d.warn("pipeline cache %s ignored: %v", d.cachePath, why)
			} else {
				data = b
			}
		}
	}
	create := func(data []byte) error {
		pcci := &vkPipelineCacheCreateInfo{SType: vkStructureTypePipelineCacheCreateInfo}
		if len(data) > 0 {
			pcci.InitialDataSize = uintptr(len(data))
			pcci.PInitialData = unsafe.Pointer(&data[0])
		}
		return check("vkCreatePipelineCache", d.fn.createPipelineCache(d.handle, unsafe.Pointer(pcci), nil, unsafe.Pointer(&d.cache)))
	}
	if len(data) > 0 {
		err := create(data)
		if err == nil {
			d.stats.PipelineCacheLoaded = len(data)
			return nil
		}
		d.warn("pipeline cache %s refused by the driver (%v): starting empty", d.cachePath, err)
	}
	return create(nil)
}

// SavePipelineCache writes the device's pipeline cache to its file now (Close does it too),
// when pipelines were created since it was loaded or last saved; a device without a cache file
// saves nothing. A failure is returned (and Close only warns of it).
func (d *Device) SavePipelineCache() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return fmt.Errorf("vulkan: device is closed")
	}
	return d.saveCacheLocked()
}

func (d *Device) saveCacheLocked() error {
	if d.cachePath == "" || d.cache == 0 || d.stats.PipelinesCreated == d.savedAt {
		return nil
	}
	var n uintptr
	if err := check("vkGetPipelineCacheData", d.fn.getPipelineCacheData(d.handle, d.cache, unsafe.Pointer(&n), nil)); err != nil {
		return err
	}
	if n < pipelineCacheHeader || n > 1<<31 {
		return nil // nothing a later start could use
	}
	data := make([]byte, n)
	if err := check("vkGetPipelineCacheData", d.fn.getPipelineCacheData(d.handle, d.cache, unsafe.Pointer(&n), unsafe.Pointer(&data[0]))); err != nil {
		return err
	}
	if err := cachedir.Write(d.cachePath, data[:n]); err != nil {
		return fmt.Errorf("vulkan: saving the pipeline cache: %w", err)
	}
	d.savedAt = d.stats.PipelinesCreated
	d.stats.PipelineCacheSaved = int(n)
	return nil
}

// PipelineCacheFile is the file the device loads its pipeline cache from and saves it to, ""
// when it keeps none.
func (d *Device) PipelineCacheFile() string { return d.cachePath }
