package main

import (
	"fmt"
	"os"
	"regexp"
	"strconv"
	"strings"
)

// registry is the part of vk.xml the generator reads.
type registry struct {
	types    map[string]*node // by name, Vulkan API only
	aliases  map[string]string
	commands map[string]*node
	cmdAlias map[string]string

	enums      map[string]*enumVal   // every enumerant (constant) by name
	groups     map[string]*enumGroup // <enums name=...> blocks by name
	headerVers int
}

// enumGroup is one <enums> block plus the values features and extensions add to it.
type enumGroup struct {
	name     string
	kind     string // "enum", "bitmask" or "constants"
	bitwidth int
	values   []string // enumerant names in registry order (aliases excluded)
}

// enumVal is one enumerant.
type enumVal struct {
	name   string
	group  string // the <enums> group it belongs to ("" for API constants)
	value  int64  // the value; for u64 constants the bit pattern
	u64    bool   // an unsigned 64-bit constant such as VK_WHOLE_SIZE
	alias  string // the enumerant it aliases, or ""
	origin string // "core" or the extension's name
	prov   bool   // from a provisional (beta) extension
}

func loadRegistry(path string) (*registry, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	root, err := parseXML(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %v", path, err)
	}
	reg := root.child("registry")
	if reg == nil {
		return nil, fmt.Errorf("%s: no <registry> element", path)
	}
	r := &registry{
		types:    map[string]*node{},
		aliases:  map[string]string{},
		commands: map[string]*node{},
		cmdAlias: map[string]string{},
		enums:    map[string]*enumVal{},
		groups:   map[string]*enumGroup{},
	}
	for _, ts := range reg.children("types") {
		for _, t := range ts.children("type") {
			if !t.forVulkan() {
				continue
			}
			name := t.Attr["name"]
			if name == "" {
				if n := t.child("name"); n != nil {
					name = n.text()
				}
			}
			if name == "" {
				continue
			}
			if a := t.Attr["alias"]; a != "" {
				r.aliases[name] = a
				continue
			}
			r.types[name] = t
			if name == "VK_HEADER_VERSION" {
				m := regexp.MustCompile(`VK_HEADER_VERSION\s+(\d+)`).FindStringSubmatch(t.text())
				if m != nil {
					r.headerVers, _ = strconv.Atoi(m[1])
				}
			}
		}
	}
	for _, es := range reg.children("enums") {
		if !es.forVulkan() {
			continue
		}
		gname := es.Attr["name"]
		g := &enumGroup{name: gname, kind: es.Attr["type"]}
		if g.kind == "" {
			g.kind = "constants"
		}
		if bw := es.Attr["bitwidth"]; bw != "" {
			g.bitwidth, _ = strconv.Atoi(bw)
		}
		r.groups[gname] = g
		for _, e := range es.children("enum") {
			if !e.forVulkan() {
				continue
			}
			if err := r.addEnum(e, g, "core", false, 0); err != nil {
				return nil, err
			}
		}
	}
	for _, ft := range reg.children("feature") {
		if !ft.forVulkan() {
			continue
		}
		if err := r.addRequires(ft, "core", false, 0); err != nil {
			return nil, err
		}
	}
	for _, exts := range reg.children("extensions") {
		for _, ext := range exts.children("extension") {
			sup := strings.Split(ext.Attr["supported"], ",")
			ok := false
			for _, s := range sup {
				if s == "vulkan" {
					ok = true
				}
			}
			if !ok {
				continue
			}
			num, _ := strconv.Atoi(ext.Attr["number"])
			if err := r.addRequires(ext, ext.Attr["name"], ext.Attr["provisional"] == "true", num); err != nil {
				return nil, err
			}
		}
	}
	for _, cs := range reg.children("commands") {
		for _, c := range cs.children("command") {
			if !c.forVulkan() {
				continue
			}
			if a := c.Attr["alias"]; a != "" {
				r.cmdAlias[c.Attr["name"]] = a
				continue
			}
			proto := c.child("proto")
			if proto == nil || proto.child("name") == nil {
				continue
			}
			r.commands[proto.child("name").text()] = c
		}
	}
	if r.headerVers == 0 {
		return nil, fmt.Errorf("%s: no VK_HEADER_VERSION", path)
	}
	return r, nil
}

// addRequires adds the enumerants a <feature> or <extension> requires that extend a group.
func (r *registry) addRequires(parent *node, origin string, prov bool, extNumber int) error {
	for _, req := range parent.children("require") {
		if !req.forVulkan() {
			continue
		}
		for _, e := range req.children("enum") {
			if !e.forVulkan() {
				continue
			}
			ext := e.Attr["extends"]
			if ext == "" {
				continue // a reference to an existing constant or an extension's name/version
			}
			g := r.groups[ext]
			if g == nil {
				g = &enumGroup{name: ext, kind: "enum"}
				r.groups[ext] = g
			}
			if err := r.addEnum(e, g, origin, prov, extNumber); err != nil {
				return err
			}
		}
	}
	return nil
}

func (r *registry) addEnum(e *node, g *enumGroup, origin string, prov bool, extNumber int) error {
	name := e.Attr["name"]
	v := &enumVal{name: name, group: g.name, origin: origin, prov: prov}
	if g.kind == "constants" {
		v.group = ""
	}
	switch {
	case e.Attr["alias"] != "":
		v.alias = e.Attr["alias"]
	case e.Attr["bitpos"] != "":
		b, err := strconv.Atoi(e.Attr["bitpos"])
		if err != nil {
			return fmt.Errorf("%s: bitpos: %v", name, err)
		}
		v.value = int64(1) << b
		if b == 63 {
			v.u64 = true
		}
	case e.Attr["offset"] != "":
		off, err := strconv.Atoi(e.Attr["offset"])
		if err != nil {
			return fmt.Errorf("%s: offset: %v", name, err)
		}
		n := extNumber
		if s := e.Attr["extnumber"]; s != "" {
			n, _ = strconv.Atoi(s)
		}
		if n == 0 {
			return fmt.Errorf("%s: offset without an extension number", name)
		}
		v.value = 1000000000 + int64(n-1)*1000 + int64(off)
		if e.Attr["dir"] == "-" {
			v.value = -v.value
		}
	case e.Attr["value"] != "":
		s := e.Attr["value"]
		switch {
		case s == "(~0ULL)":
			v.value, v.u64 = -1, true
		case s == "(~0U)":
			v.value = 0xFFFFFFFF
		case s == "(~1U)":
			v.value = 0xFFFFFFFE
		case s == "(~2U)":
			v.value = 0xFFFFFFFD
		case strings.HasPrefix(s, `"`) || strings.HasSuffix(s, ".0F") || strings.Contains(s, "."):
			return nil // strings and floats are not used
		default:
			x, err := strconv.ParseInt(s, 0, 64)
			if err != nil {
				return fmt.Errorf("%s: value %q: %v", name, s, err)
			}
			v.value = x
		}
	default:
		return nil
	}
	if old, ok := r.enums[name]; ok {
		if old.value != v.value || old.alias != v.alias {
			return fmt.Errorf("enumerant %s defined twice with different values", name)
		}
		if old.origin != "core" && origin == "core" {
			old.origin = "core"
		}
		if !prov {
			old.prov = false
		}
		return nil
	}
	r.enums[name] = v
	if v.alias == "" {
		g.values = append(g.values, name)
	}
	return nil
}

// resolveType follows type aliases.
func (r *registry) resolveType(name string) string {
	for i := 0; i < 10; i++ {
		a, ok := r.aliases[name]
		if !ok {
			return name
		}
		name = a
	}
	return name
}
