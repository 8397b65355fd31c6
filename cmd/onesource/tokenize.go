package main

import (
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/onesource-go/onesource/tokenizer"
)

func init() {
	register("tokenize", "a GGUF model's tokenizer: text to token ids, or ids to text (-decode)", runTokenize)
}

const tokenizeUsage = `usage:
  onesource tokenize [-bos] [-special] MODEL.gguf TEXT   the ids of TEXT, space-separated, on one line
  onesource tokenize -decode [-special] MODEL.gguf ID...  the text of the ids (space- or comma-separated)

  -bos      prepend the vocabulary's BOS token (none by default, whatever add_bos_token says)
  -special  text that spells a control token is that token; -decode: write control tokens' text
  -decode   take token ids and print their text
  --        end of options (for a TEXT that starts with -)
`

// runTokenize is the tokenize subcommand: the ids llama.cpp's tokenizer gives TEXT, so a user
// can check a vocabulary. Exit status: 0 success, 1 error (bad or unsupported vocabulary, an id
// outside it), 2 usage error.
func runTokenize(args []string, stdout, stderr io.Writer) int {
	var bos, special, decode bool
	var pos []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--":
			pos = append(pos, args[i+1:]...)
			i = len(args)
		case a == "-bos" || a == "--bos":
			bos = true
		case a == "-special" || a == "--special":
			special = true
		case a == "-decode" || a == "--decode":
			decode = true
		case a == "-h" || a == "-help" || a == "--help":
			fmt.Fprint(stdout, tokenizeUsage)
			return 0
		case len(a) > 1 && a[0] == '-':
			fmt.Fprintf(stderr, "onesource tokenize: unknown option %q (a TEXT that starts with - goes after --)\n%s", a, tokenizeUsage)
			return 2
		default:
			pos = append(pos, a)
		}
	}
	usage := func(msg string) int {
		fmt.Fprintf(stderr, "onesource tokenize: %s\n%s", msg, tokenizeUsage)
		return 2
	}
	if decode && bos {
		return usage("-bos is for encoding; -decode prints the ids it is given")
	}
	if len(pos) < 2 || !decode && len(pos) != 2 {
		return usage("want MODEL.gguf and one TEXT (quote it), or -decode MODEL.gguf ID...")
	}
	var ids []int32
	if decode {
		var err error
		if ids, err = parseIDs(pos[1:]); err != nil {
			return usage(err.Error())
		}
	}
	fail := func(err error) int {
		fmt.Fprintln(stderr, "onesource tokenize:", err)
		return 1
	}
	tok, err := tokenizer.Open(pos[0])
	if err != nil {
		return fail(err)
	}
	if decode {
		text, err := tok.Decode(ids, tokenizer.DecodeOptions{Special: special})
		if err != nil {
			return fail(err)
		}
		fmt.Fprintln(stdout, text)
		return 0
	}
	ids, err = tok.Encode(pos[1], tokenizer.EncodeOptions{BOS: bos, Special: special})
	if err != nil {
		return fail(err)
	}
	var b strings.Builder
	for i, id := range ids {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(strconv.Itoa(int(id)))
	}
	fmt.Fprintln(stdout, b.String())
	return 0
}

// parseIDs reads token ids from arguments that hold them separated by spaces or commas (a
// bracketed list, as llama.cpp's tokenizer tool prints with --ids, is accepted too).
func parseIDs(args []string) ([]int32, error) {
	var ids []int32
	for _, a := range args {
		f := strings.FieldsFunc(a, func(r rune) bool { return r == ' ' || r == ',' || r == '\t' || r == '\n' || r == '[' || r == ']' })
		for _, s := range f {
			id, err := strconv.ParseInt(s, 10, 32)
			if err != nil || id < 0 {
				return nil, fmt.Errorf("%q is not a token id", s)
			}
			ids = append(ids, int32(id))
		}
	}
	if len(ids) == 0 {
		return nil, errors.New("-decode: no token ids given")
	}
	return ids, nil
}
