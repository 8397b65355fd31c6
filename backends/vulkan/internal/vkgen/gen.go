package main

import (
	"bytes"
	"fmt"
	"go/format"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

// decl is one parsed struct member or command parameter.
type decl struct {
	cname string   // C name
	ctype string   // C type name (aliases not resolved)
	ptrs  int      // pointer depth
	dims  []string // array dimensions: numbers or constant names
}

// parseDecl reads "const <type>T</type>* <name>n</name>[<enum>N</enum>]".
func parseDecl(n *node) (decl, error) {
	var d decl
	state := 0 // 0 before type, 1 between type and name, 2 after name
	var suffix strings.Builder
	for _, it := range n.Items {
		if it.Elem != nil {
			switch it.Elem.Name {
			case "type":
				d.ctype = it.Elem.text()
				state = 1
			case "name":
				d.cname = it.Elem.text()
				state = 2
			case "enum":
				if state == 2 {
					suffix.WriteString(it.Elem.text())
				}
			case "comment":
			default:
				return d, fmt.Errorf("unexpected <%s> in declaration", it.Elem.Name)
			}
			continue
		}
		switch state {
		case 1:
			d.ptrs += strings.Count(it.Text, "*")
		case 2:
			suffix.WriteString(it.Text)
		}
	}
	s := strings.TrimSpace(suffix.String())
	if strings.Contains(s, ":") {
		return d, fmt.Errorf("%s: bit fields are not supported", d.cname)
	}
	for s != "" {
		m := regexp.MustCompile(`^\[\s*([A-Za-z0-9_]+)\s*\]`).FindStringSubmatch(s)
		if m == nil {
			return d, fmt.Errorf("%s: cannot read array suffix %q", d.cname, s)
		}
		d.dims = append(d.dims, m[1])
		s = strings.TrimSpace(s[len(m[0]):])
	}
	if d.cname == "" || d.ctype == "" {
		return d, fmt.Errorf("incomplete declaration %q", n.text())
	}
	return d, nil
}

// gen holds the output being built.
type gen struct {
	r         *registry
	structQ   []string        // structs to emit, in order
	structSet map[string]bool // queued
	typeDecls map[string]string
	baseOf    map[string]string // Go type name -> its underlying Go type
	consts    map[string]bool   // C constants to emit (beside the groups)
	sTypes    []string
	goNames   map[string]string // Go identifier -> the C name it came from
}

var builtin = map[string]string{
	"uint8_t":  "uint8",
	"uint16_t": "uint16",
	"uint32_t": "uint32",
	"uint64_t": "uint64",
	"int8_t":   "int8",
	"int16_t":  "int16",
	"int32_t":  "int32",
	"int64_t":  "int64",
	"int":      "int32",
	"char":     "byte",
	"float":    "float32",
	"double":   "float64",
	"size_t":   "uintptr",
}

// typeName is the Go name of a Vulkan type: VkFoo -> vkFoo.
func typeName(c string) string {
	if strings.HasPrefix(c, "Vk") {
		return "vk" + c[2:]
	}
	return c
}

// constName is the Go name of a Vulkan constant: VK_STRUCTURE_TYPE_SUBMIT_INFO -> vkStructureTypeSubmitInfo.
func constName(c string) string {
	parts := strings.Split(c, "_")
	var b strings.Builder
	b.WriteString("vk")
	for _, p := range parts[1:] {
		if p == "" {
			continue
		}
		p = strings.ToLower(p)
		b.WriteString(strings.ToUpper(p[:1]) + p[1:])
	}
	return b.String()
}

// fieldName is the Go name of a struct member: sType -> SType.
func fieldName(c string) string {
	return strings.ToUpper(c[:1]) + c[1:]
}

func (g *gen) claim(goName, cName string) error {
	if old, ok := g.goNames[goName]; ok && old != cName {
		return fmt.Errorf("Go name %s used for both %s and %s", goName, old, cName)
	}
	g.goNames[goName] = cName
	return nil
}

// goType maps a non-pointer C type to Go, declaring the named Go types it needs.
func (g *gen) goType(ctype string) (string, error) {
	if b, ok := builtin[ctype]; ok {
		return b, nil
	}
	name := g.r.resolveType(ctype)
	t := g.r.types[name]
	if t == nil {
		return "", fmt.Errorf("unknown type %s", ctype)
	}
	gn := typeName(name)
	switch t.Attr["category"] {
	case "basetype", "bitmask":
		inner := t.child("type")
		if inner == nil {
			return "", fmt.Errorf("%s: opaque base type", name)
		}
		base, err := g.goType(inner.text())
		if err != nil {
			return "", fmt.Errorf("%s: %v", name, err)
		}
		if err := g.claim(gn, name); err != nil {
			return "", err
		}
		g.typeDecls[gn] = fmt.Sprintf("// %s mirrors %s.\ntype %s = %s\n", gn, name, gn, base)
		g.baseOf[gn] = base
		return gn, nil
	case "enum":
		grp := g.r.groups[name]
		base := "int32"
		if grp != nil && grp.kind == "bitmask" {
			base = "uint32"
			if grp.bitwidth == 64 {
				base = "uint64"
			}
		}
		if err := g.claim(gn, name); err != nil {
			return "", err
		}
		if name == "VkResult" {
			g.typeDecls[gn] = fmt.Sprintf("// %s mirrors %s.\ntype %s %s\n", gn, name, gn, base)
			g.baseOf[gn] = base
		} else {
			g.typeDecls[gn] = fmt.Sprintf("// %s mirrors %s.\ntype %s = %s\n", gn, name, gn, base)
			g.baseOf[gn] = base
		}
		return gn, nil
	case "handle":
		base := "uint64" // VK_DEFINE_NON_DISPATCHABLE_HANDLE: 64 bits on every platform
		if inner := t.child("type"); inner != nil && inner.text() == "VK_DEFINE_HANDLE" {
			base = "uintptr"
		}
		if err := g.claim(gn, name); err != nil {
			return "", err
		}
		g.typeDecls[gn] = fmt.Sprintf("// %s is a %s handle.\ntype %s %s\n", gn, name, gn, base)
		g.baseOf[gn] = base
		return gn, nil
	case "funcpointer":
		return "uintptr", nil
	case "struct":
		if !g.structSet[name] {
			g.structSet[name] = true
			g.structQ = append(g.structQ, name)
		}
		return gn, nil
	}
	return "", fmt.Errorf("type %s of category %q is not supported", name, t.Attr["category"])
}

func (g *gen) dimension(d string) (string, error) {
	if _, err := strconv.Atoi(d); err == nil {
		return d, nil
	}
	if _, ok := g.r.enums[d]; !ok {
		return "", fmt.Errorf("unknown array size %s", d)
	}
	g.consts[d] = true
	return constName(d), nil
}

func (g *gen) emitStruct(out *bytes.Buffer, name string) error {
	t := g.r.types[name]
	if t == nil || t.Attr["category"] != "struct" {
		return fmt.Errorf("%s is not a struct", name)
	}
	gn := typeName(name)
	if err := g.claim(gn, name); err != nil {
		return err
	}
	fmt.Fprintf(out, "// %s mirrors %s.\ntype %s struct {\n\t_ structs.HostLayout\n", gn, name, gn)
	for _, m := range t.children("member") {
		if !m.forVulkan() {
			continue
		}
		d, err := parseDecl(m)
		if err != nil {
			return fmt.Errorf("%s: %v", name, err)
		}
		var gt string
		if d.ptrs > 0 {
			gt = "unsafe.Pointer"
		} else {
			gt, err = g.goType(d.ctype)
			if err != nil {
				return fmt.Errorf("%s.%s: %v", name, d.cname, err)
			}
		}
		for i := len(d.dims) - 1; i >= 0; i-- {
			dim, err := g.dimension(d.dims[i])
			if err != nil {
				return fmt.Errorf("%s.%s: %v", name, d.cname, err)
			}
			gt = "[" + dim + "]" + gt
		}
		if v := m.Attr["values"]; v != "" && d.cname == "sType" {
			g.consts[v] = true
			g.sTypes = append(g.sTypes, v)
		}
		fmt.Fprintf(out, "\t%s %s `c:\"%s\"`\n", fieldName(d.cname), gt, d.cname)
	}
	fmt.Fprintf(out, "}\n\n")
	return nil
}

var goKeywords = map[string]bool{
	"break": true, "case": true, "chan": true, "const": true, "continue": true, "default": true,
	"defer": true, "else": true, "fallthrough": true, "for": true, "func": true, "go": true,
	"goto": true, "if": true, "import": true, "interface": true, "map": true, "package": true,
	"range": true, "return": true, "select": true, "struct": true, "switch": true, "type": true,
	"var": true, "f": true, "r": true,
}

func (g *gen) emitCommand(out *bytes.Buffer, table, cname string) error {
	name := cname
	if a, ok := g.r.cmdAlias[name]; ok {
		name = a
	}
	c := g.r.commands[name]
	if c == nil {
		return fmt.Errorf("unknown command %s", cname)
	}
	proto, err := parseDecl(c.child("proto"))
	if err != nil {
		return fmt.Errorf("%s: %v", cname, err)
	}
	ret := ""
	if proto.ctype != "void" || proto.ptrs > 0 {
		if proto.ptrs > 0 {
			return fmt.Errorf("%s: pointer results are not supported", cname)
		}
		ret, err = g.goType(proto.ctype)
		if err != nil {
			return fmt.Errorf("%s: %v", cname, err)
		}
	}
	var params, args []string
	for _, p := range c.children("param") {
		if !p.forVulkan() {
			continue
		}
		d, err := parseDecl(p)
		if err != nil {
			return fmt.Errorf("%s: %v", cname, err)
		}
		if len(d.dims) > 0 {
			return fmt.Errorf("%s.%s: array parameters are not supported", cname, d.cname)
		}
		var gt string
		if d.ptrs > 0 {
			gt = "unsafe.Pointer"
		} else {
			if t := g.r.types[g.r.resolveType(d.ctype)]; t != nil && (t.Attr["category"] == "struct" || t.Attr["category"] == "union") {
				return fmt.Errorf("%s.%s: structs by value are not supported", cname, d.cname)
			}
			gt, err = g.goType(d.ctype)
			if err != nil {
				return fmt.Errorf("%s.%s: %v", cname, d.cname, err)
			}
			switch gt {
			case "float32", "float64":
				return fmt.Errorf("%s.%s: float parameters are not supported by purego.SyscallN", cname, d.cname)
			}
		}
		pn := d.cname
		if goKeywords[pn] {
			pn += "_"
		}
		params = append(params, pn+" "+gt)
		args = append(args, "uintptr("+pn+")")
	}
	method := strings.ToLower(cname[2:3]) + cname[3:]
	fmt.Fprintf(out, "// %s calls %s.\nfunc (f *%s) %s(%s) %s {\n", method, cname, table, method, strings.Join(params, ", "), ret)
	call := fmt.Sprintf("vkCall(f.%s", cname)
	if len(args) > 0 {
		call += ", " + strings.Join(args, ", ")
	}
	call += ")"
	switch ret {
	case "":
		fmt.Fprintf(out, "\t%s\n", call)
	default:
		base := ret
		if b, ok := g.baseOf[ret]; ok {
			base = b
		}
		conv := "r"
		switch base {
		case "int32", "uint32", "int8", "uint8", "int16", "uint16":
			conv = base + "(r)"
		}
		fmt.Fprintf(out, "\tr := %s\n\treturn %s(%s)\n", call, ret, conv)
	}
	fmt.Fprintf(out, "}\n\n")
	return nil
}

func (g *gen) constLiteral(v *enumVal, hex bool) string {
	switch {
	case v.u64:
		return fmt.Sprintf("0x%X", uint64(v.value))
	case hex && v.value >= 0:
		return fmt.Sprintf("0x%08X", v.value)
	}
	return strconv.FormatInt(v.value, 10)
}

// resolveEnum follows aliases.
func (g *gen) resolveEnum(name string) (*enumVal, error) {
	for i := 0; i < 10; i++ {
		v := g.r.enums[name]
		if v == nil {
			return nil, fmt.Errorf("unknown constant %s", name)
		}
		if v.alias == "" {
			return v, nil
		}
		name = v.alias
	}
	return nil, fmt.Errorf("alias loop at %s", name)
}

func generate(regPath string) (src, test []byte, err error) {
	r, err := loadRegistry(regPath)
	if err != nil {
		return nil, nil, err
	}
	g := &gen{
		r:         r,
		structSet: map[string]bool{},
		typeDecls: map[string]string{},
		baseOf:    map[string]string{},
		consts:    map[string]bool{},
		goNames:   map[string]string{},
	}
	for _, s := range structs {
		if !g.structSet[s] {
			g.structSet[s] = true
			g.structQ = append(g.structQ, s)
		}
	}
	var structOut bytes.Buffer
	for i := 0; i < len(g.structQ); i++ {
		if err := g.emitStruct(&structOut, g.structQ[i]); err != nil {
			return nil, nil, err
		}
	}
	var cmdOut bytes.Buffer
	var tableOut bytes.Buffer
	for _, t := range funcTables {
		fmt.Fprintf(&tableOut, "// %s are the Vulkan functions that %s\ntype %s struct {\n", t.name, t.doc, t.name)
		for _, c := range t.commands {
			fmt.Fprintf(&tableOut, "\t%s uintptr\n", c)
		}
		fmt.Fprintf(&tableOut, "}\n\n// entries lists the table's functions by name.\nfunc (f *%s) entries() []vkFuncEntry {\n\treturn []vkFuncEntry{\n", t.name)
		for _, c := range t.commands {
			fmt.Fprintf(&tableOut, "\t\t{%q, &f.%s},\n", c, c)
		}
		fmt.Fprintf(&tableOut, "\t}\n}\n\n")
		for _, c := range t.commands {
			if err := g.emitCommand(&cmdOut, t.name, c); err != nil {
				return nil, nil, err
			}
		}
	}

	// Constants: whole groups, then the sTypes and single constants not already in a group.
	type constLine struct{ c, line string }
	var constOut bytes.Buffer
	var testConsts []string
	emitted := map[string]bool{}
	emitConst := func(out *bytes.Buffer, cname string, typ string, hex bool) error {
		if emitted[cname] {
			return nil
		}
		v, err := g.resolveEnum(cname)
		if err != nil {
			return err
		}
		if v.alias != "" || v.prov {
			return nil
		}
		gn := constName(cname)
		if err := g.claim(gn, cname); err != nil {
			return err
		}
		emitted[cname] = true
		lit := g.constLiteral(v, hex)
		if typ != "" {
			fmt.Fprintf(out, "\t%s %s = %s\n", gn, typ, lit)
		} else {
			fmt.Fprintf(out, "\t%s = %s\n", gn, lit)
		}
		if v.u64 {
			testConsts = append(testConsts, fmt.Sprintf("\t{c: %q, u: uint64(%s), unsigned: true},\n", cname, gn))
		} else {
			testConsts = append(testConsts, fmt.Sprintf("\t{c: %q, s: int64(%s)},\n", cname, gn))
		}
		return nil
	}
	var resultNames bytes.Buffer
	for _, gname := range enumGroups {
		grp := r.groups[gname]
		if grp == nil {
			return nil, nil, fmt.Errorf("unknown enum group %s", gname)
		}
		typ := ""
		if gname == "VkResult" {
			if _, err := g.goType("VkResult"); err != nil {
				return nil, nil, err
			}
			typ = "vkResult"
		}
		fmt.Fprintf(&constOut, "// %s\nconst (\n", gname)
		for _, name := range grp.values {
			v := r.enums[name]
			if v.prov || (v.origin != "core" && gname != "VkResult") {
				continue
			}
			if err := emitConst(&constOut, name, typ, grp.kind == "bitmask"); err != nil {
				return nil, nil, err
			}
			if gname == "VkResult" {
				fmt.Fprintf(&resultNames, "\t%s: %q,\n", constName(name), name)
			}
		}
		fmt.Fprintf(&constOut, ")\n\n")
	}
	fmt.Fprintf(&constOut, "// Structure types of the mirrored structs.\nconst (\n")
	for _, s := range g.sTypes {
		if err := emitConst(&constOut, s, "", false); err != nil {
			return nil, nil, err
		}
	}
	fmt.Fprintf(&constOut, ")\n\n// Other constants.\nconst (\n")
	var others []string
	for c := range g.consts {
		others = append(others, c)
	}
	others = append(others, extraConstants...)
	sort.Strings(others)
	for _, c := range others {
		v, err := g.resolveEnum(c)
		if err != nil {
			return nil, nil, err
		}
		hex := strings.HasSuffix(c, "_BIT") || strings.HasSuffix(c, "_BIT_KHR") || v.u64
		if err := emitConst(&constOut, c, "", hex); err != nil {
			return nil, nil, err
		}
	}
	fmt.Fprintf(&constOut, ")\n\n")

	var typeNames []string
	for n := range g.typeDecls {
		typeNames = append(typeNames, n)
	}
	sort.Strings(typeNames)

	var out bytes.Buffer
	fmt.Fprintf(&out, "// Code generated by vkgen from vk.xml (VK_HEADER_VERSION %d); DO NOT EDIT.\n\n", r.headerVers)
	fmt.Fprintf(&out, "package vulkan\n\nimport (\n\t\"structs\"\n\t\"unsafe\"\n)\n\n")
	fmt.Fprintf(&out, "// vkRegistryHeaderVersion is the VK_HEADER_VERSION of the vk.xml this file was generated from.\nconst vkRegistryHeaderVersion = %d\n\n", r.headerVers)
	for _, n := range typeNames {
		out.WriteString(g.typeDecls[n])
		out.WriteString("\n")
	}
	out.Write(constOut.Bytes())
	fmt.Fprintf(&out, "// vkResultNames names every VkResult value.\nvar vkResultNames = map[vkResult]string{\n%s}\n\n", resultNames.String())
	out.Write(structOut.Bytes())
	out.Write(tableOut.Bytes())
	out.Write(cmdOut.Bytes())
	src, err = format.Source(out.Bytes())
	if err != nil {
		return nil, nil, fmt.Errorf("formatting output: %v\n%s", err, out.String())
	}

	var t bytes.Buffer
	fmt.Fprintf(&t, "// Code generated by vkgen from vk.xml (VK_HEADER_VERSION %d); DO NOT EDIT.\n\n", r.headerVers)
	fmt.Fprintf(&t, "package vulkan\n\nimport \"reflect\"\n\n")
	fmt.Fprintf(&t, "// vkMirroredStructs lists every struct mirror in vk_generated.go with its C name.\nvar vkMirroredStructs = []vkMirroredStruct{\n")
	for _, s := range g.structQ {
		fmt.Fprintf(&t, "\t{%q, reflect.TypeOf(%s{})},\n", s, typeName(s))
	}
	fmt.Fprintf(&t, "}\n\n// vkMirroredConsts lists every constant in vk_generated.go with its C name.\nvar vkMirroredConsts = []vkMirroredConst{\n")
	for _, c := range testConsts {
		t.WriteString(c)
	}
	fmt.Fprintf(&t, "}\n")
	test, err = format.Source(t.Bytes())
	if err != nil {
		return nil, nil, fmt.Errorf("formatting test output: %v", err)
	}
	return src, test, nil
}
