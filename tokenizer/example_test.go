package tokenizer_test

import (
	"fmt"
	"log"

	"github.com/onesource-go/onesource/tokenizer"
)

// Encode and decode with GPT-2's vocabulary; the ids are llama.cpp's for the same text (its
// tokenizer test vectors, testdata/ggml-vocab-gpt-2.gguf.out).
func Example() {
	tok, err := tokenizer.Open("testdata/ggml-vocab-gpt-2.gguf")
	if err != nil {
		log.Fatal(err)
	}
	ids, err := tok.Encode("Hello, world!", tokenizer.EncodeOptions{})
	if err != nil {
		log.Fatal(err)
	}
	text, err := tok.Decode(ids, tokenizer.DecodeOptions{})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(tok.Model(), tok.Pre(), ids)
	fmt.Printf("%q\n", text)
	// Output:
	// gpt2 gpt-2 [15496 11 995 0]
	// "Hello, world!"
}
