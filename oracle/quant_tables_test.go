package oracle

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"math/bits"
	"os"
	"strings"
	"testing"
)

// tableSHA256 are the sha256 sums of the table files as dumped from ggml commit
// d99724f2b141fed9e1a9f402213506c081433465 (tables.json records sizes only).
var tableSHA256 = map[string]string{
	"iq1s_grid.bin":     "07540ffc1aeaf6ad4d97e96b0fcc765aae39671d4ae4a27bbd0e796fde167c6a",
	"iq2s_grid.bin":     "e1aa1473412b0552c2174c30ef22ab4073f6a181b85a17056e8249bd2932fd88",
	"iq2xs_grid.bin":    "06e47aaca60b4dc1d9b5a3f34540437058a6b142b4d7a59d5ded769b4d1bf1de",
	"iq2xxs_grid.bin":   "05826b5d3e472a3a78f196be62ac78acf81df0f909626e12ab9fa2a5d490dd54",
	"iq3s_grid.bin":     "bd1af4945a1717c65610b0284e4628b9a1ba3b306fae3a06f6e5f597356e349f",
	"iq3xxs_grid.bin":   "46e35f5a997efdee6c99ce57854c8a0d4f0ff8ca57e5e8a60c0793ea580acf5d",
	"kmask_iq2xs.bin":   "5ac9831b2e30eb285ef34f8501620f878432d5c04331ad1ae47f977a83ba41a5",
	"ksigns64.bin":      "6ca8598509cc63406eaece40cff6b60198f6fa1e0dff261de7bd8d73bfed770c",
	"ksigns_iq2xs.bin":  "a76742a603f8beca5212ecce0f1f02f11a4887fd2f7c8b15aca0ea3eb3380c31",
	"kvalues_fp4.bin":   "adf76b672d47eb7fc0afd4db132d548d59d3190aa0ad118fdbf569d5fd478f97",
	"kvalues_iq4nl.bin": "61aa47540aa024b5d6ddaa839b84ffe59f3d5a349af5c6c7ffcb5e0474b46163",
}

// TestTablesEmbedded checks every embedded table against tables.json (element type, count,
// size) and its recorded sha256, and that the embedded bytes are the files in tables/.
func TestTablesEmbedded(t *testing.T) {
	raw, err := os.ReadFile("tables/tables.json")
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Tables []TableInfo `json:"tables"`
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	elem := map[string]int{"uint8_t": 1, "int8_t": 1, "uint32_t": 4, "uint64_t": 8}
	n := 0
	for _, ti := range doc.Tables {
		if ti.Name == "" {
			continue
		}
		n++
		b, ok := TableBytes(ti.Name)
		if !ok {
			t.Errorf("%s: not embedded", ti.Name)
			continue
		}
		if ti.Count*elem[ti.CType] != ti.Bytes || len(b) != ti.Bytes {
			t.Errorf("%s: %d bytes embedded, tables.json says %d x %s = %d bytes", ti.Name, len(b), ti.Count, ti.CType, ti.Bytes)
		}
		sum := sha256.Sum256(b)
		if got := hex.EncodeToString(sum[:]); got != tableSHA256[ti.File] {
			t.Errorf("%s: sha256 %s, want %s", ti.File, got, tableSHA256[ti.File])
		}
		disk, err := os.ReadFile("tables/" + ti.File)
		if err != nil || string(disk) != string(b) {
			t.Errorf("%s: embedded bytes differ from tables/%s (%v)", ti.Name, ti.File, err)
		}
	}
	if n != len(tableSHA256) || len(Tables()) != n {
		t.Errorf("tables.json lists %d tables, Tables() %d, sha256 list %d", n, len(Tables()), len(tableSHA256))
	}
	if _, ok := TableBytes("no_such_table"); ok {
		t.Error("TableBytes found a table that does not exist")
	}
}

// TestTablesStructure checks the tables' defining properties, so a wrong table is caught even
// with matching sums.
func TestTablesStructure(t *testing.T) {
	for i, m := range kmaskIQ2XS {
		if m != 1<<i {
			t.Errorf("kmask_iq2xs[%d] = %#x", i, m)
		}
	}
	k64, _ := TableBytes("ksigns64")
	for i, s := range ksignsIQ2XS {
		// 7 explicit sign bits; bit 7 makes the number of minus signs even.
		want := uint8(i) | uint8(bits.OnesCount8(uint8(i))&1)<<7
		if s != want {
			t.Errorf("ksigns_iq2xs[%d] = %#x, want %#x", i, s, want)
		}
		for j := 0; j < 8; j++ {
			wantByte := uint8(0)
			if s&(1<<j) != 0 {
				wantByte = 0xff
			}
			if k64[8*i+j] != wantByte {
				t.Errorf("ksigns64[%d] byte %d = %#x, want %#x", i, j, k64[8*i+j], wantByte)
			}
		}
	}
	for i := 1; i < 16; i++ {
		if tblIQ4NL[i] <= tblIQ4NL[i-1] {
			t.Errorf("kvalues_iq4nl not increasing at %d", i)
		}
	}
	fp4 := [16]int8{0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12} // E2M1, doubled
	if tblFP4 != fp4 {
		t.Errorf("kvalues_fp4 = %v, want %v", tblFP4, fp4)
	}
	grids := []struct {
		name   string
		g      []byte
		levels map[byte]bool
	}{
		{"iq2xxs_grid", iq2xxsGrid, map[byte]bool{0x08: true, 0x19: true, 0x2b: true}},
		{"iq2xs_grid", iq2xsGrid, map[byte]bool{0x08: true, 0x19: true, 0x2b: true}},
		{"iq2s_grid", iq2sGrid, map[byte]bool{0x08: true, 0x19: true, 0x2b: true}},
		{"iq1s_grid", iq1sGrid, map[byte]bool{0x00: true, 0x01: true, 0xff: true}},
	}
	for _, g := range grids {
		seen := map[uint64]bool{}
		for i := 0; i < len(g.g); i += 8 {
			for _, v := range g.g[i : i+8] {
				if !g.levels[v] {
					t.Fatalf("%s entry %d has level %#x", g.name, i/8, v)
				}
			}
			e := binary.LittleEndian.Uint64(g.g[i:])
			if seen[e] {
				t.Errorf("%s entry %d repeats", g.name, i/8)
			}
			seen[e] = true
		}
	}
	iq3Levels := []struct {
		name   string
		g      []byte
		levels string
	}{
		{"iq3xxs_grid", iq3xxsGrid, "\x04\x0c\x14\x1c\x24\x2c\x34\x3e"},
		{"iq3s_grid", iq3sGrid, "\x01\x03\x05\x07\x09\x0b\x0d\x0f"},
	}
	for _, g := range iq3Levels {
		for i, v := range g.g {
			if !strings.ContainsRune(g.levels, rune(v)) {
				t.Fatalf("%s byte %d = %d is not one of its 8 levels", g.name, i, v)
			}
		}
	}
}
