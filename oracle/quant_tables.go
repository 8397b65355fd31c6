package oracle

import (
	"embed"
	"encoding/json"
	"fmt"
	"sort"
)

// The codebook and sign tables of the i-quant, iq4 and fp4 formats, embedded from tables/ (raw
// little-endian arrays dumped from ggml; tables/README.md and tables/tables.json describe them).
//
//go:embed tables/*.bin tables/tables.json
var tableFS embed.FS

// TableInfo describes one embedded codebook table as tables/tables.json lists it.
type TableInfo struct {
	Name  string `json:"name"`  // ggml's array name, e.g. "iq2xxs_grid"
	File  string `json:"file"`  // file name under tables/
	CType string `json:"ctype"` // C element type, e.g. "uint64_t"
	Count int    `json:"count"` // number of elements
	Bytes int    `json:"bytes"` // size of the file
}

var (
	tableInfos []TableInfo
	tableData  = map[string][]byte{}

	kmaskIQ2XS  []byte // 8 x uint8: 1<<i
	ksignsIQ2XS []byte // 128 x uint8: 7-bit sign index -> 8 sign bits (even parity)
	iq2xxsGrid  []byte // 256 x 8 uint8 magnitudes
	iq2xsGrid   []byte // 512 x 8 uint8
	iq2sGrid    []byte // 1024 x 8 uint8
	iq3xxsGrid  []byte // 256 x 4 uint8
	iq3sGrid    []byte // 512 x 4 uint8
	iq1sGrid    []byte // 2048 x 8 int8 in {-1, 0, 1}
	tblIQ4NL    [16]int8
	tblFP4      [16]int8
)

func init() {
	raw, err := tableFS.ReadFile("tables/tables.json")
	if err != nil {
		panic("oracle: embedded tables.json: " + err.Error())
	}
	var doc struct {
		Tables []TableInfo `json:"tables"`
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		panic("oracle: embedded tables.json: " + err.Error())
	}
	for _, ti := range doc.Tables {
		if ti.Name == "" { // tables.json ends with an empty {} entry
			continue
		}
		b, err := tableFS.ReadFile("tables/" + ti.File)
		if err != nil {
			panic("oracle: embedded table: " + err.Error())
		}
		if len(b) != ti.Bytes {
			panic(fmt.Sprintf("oracle: embedded table %s: %d bytes, tables.json says %d", ti.Name, len(b), ti.Bytes))
		}
		tableInfos = append(tableInfos, ti)
		tableData[ti.Name] = b
	}
	sort.Slice(tableInfos, func(i, j int) bool { return tableInfos[i].Name < tableInfos[j].Name })
	need := func(name string, size int) []byte {
		b, ok := tableData[name]
		if !ok || len(b) != size {
			panic(fmt.Sprintf("oracle: embedded table %s missing or not %d bytes", name, size))
		}
		return b
	}
	kmaskIQ2XS = need("kmask_iq2xs", 8)
	ksignsIQ2XS = need("ksigns_iq2xs", 128)
	iq2xxsGrid = need("iq2xxs_grid", 256*8)
	iq2xsGrid = need("iq2xs_grid", 512*8)
	iq2sGrid = need("iq2s_grid", 1024*8)
	iq3xxsGrid = need("iq3xxs_grid", 256*4)
	iq3sGrid = need("iq3s_grid", 512*4)
	iq1sGrid = need("iq1s_grid", 2048*8)
	for i, v := range need("kvalues_iq4nl", 16) {
		tblIQ4NL[i] = int8(v)
	}
	for i, v := range need("kvalues_fp4", 16) {
		tblFP4[i] = int8(v)
	}
}

// Tables lists the embedded codebook tables (iq grids, sign tables, iq4 and fp4 levels), sorted
// by name.
func Tables() []TableInfo {
	return append([]TableInfo(nil), tableInfos...)
}

// TableBytes returns a copy of the raw little-endian bytes of the named codebook table (ggml's
// array name, e.g. "iq2xxs_grid", "ksigns_iq2xs", "kvalues_iq4nl"), for code generators that
// must embed the same constants in kernels; ok is false for an unknown name.
func TableBytes(name string) (b []byte, ok bool) {
	t, ok := tableData[name]
	if !ok {
		return nil, false
	}
	return append([]byte(nil), t...), true
}
