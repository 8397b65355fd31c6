package incumbent

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
)

var includeRE = regexp.MustCompile(`(?m)^[ \t]*#[ \t]*include[ \t]*[<"]([^>"]+)[>"]`)

// SourceFiles returns the files source src of the manifest uses, as cleaned absolute paths (when
// the manifest's directory is) with the kind of source each belongs to ("glsl", "cuda", "hip",
// "msl" or "spirv"): the named file and, for the text sources, what it #includes, resolved against
// the including file's directory, then the source's include directories. An include found
// nowhere (a system header) is not the manifest's file and is left out.
func (m *Manifest) SourceFiles(src Source) (map[string]string, error) {
	out := map[string]string{}
	var path, kind string
	switch {
	case src.GLSL != "":
		path, kind = src.GLSL, "glsl"
	case src.CUDA != "":
		path, kind = src.CUDA, "cuda"
	case src.HIP != "":
		path, kind = src.HIP, "hip"
	case src.MSL != "":
		path, kind = src.MSL, "msl"
	case src.SPIRV != "":
		path, kind = src.SPIRV, "spirv"
	default:
		return nil, fmt.Errorf("incumbent: a source names no file")
	}
	abs := func(p string) string { return filepath.Clean(m.resolve(p)) }
	var dirs []string
	for _, d := range src.IncludeDirs {
		dirs = append(dirs, abs(d))
	}
	var walk func(p string) error
	walk = func(p string) error {
		if _, seen := out[p]; seen {
			return nil
		}
		out[p] = kind
		if kind == "spirv" {
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		for _, mm := range includeRE.FindAllSubmatch(b, -1) {
			name := string(mm[1])
			for _, d := range append([]string{filepath.Dir(p)}, dirs...) {
				c := filepath.Join(d, name)
				if _, err := os.Stat(c); err == nil {
					if err := walk(filepath.Clean(c)); err != nil {
						return err
					}
					break
				}
			}
		}
		return nil
	}
	return out, walk(abs(path))
}

// Inputs returns every file the manifest reads or makes a program read: the manifest itself and,
// for every entry and variant, its source's files (SourceFiles). A file that cannot be read is
// still listed. They are what a command must not write an output over.
func (m *Manifest) Inputs() []string {
	var out []string
	if m.Path != "" {
		out = append(out, m.Path)
	}
	add := func(src Source) {
		fs, _ := m.SourceFiles(src)
		for f := range fs {
			out = append(out, f)
		}
	}
	for _, e := range m.Incumbents {
		add(e.Source)
		for _, v := range e.Variants {
			if v.Source != nil {
				add(*v.Source)
			}
		}
	}
	return out
}
