package testmode

import (
	"slices"
	"testing"
)

func TestSample(t *testing.T) {
	list := []string{"a", "b", "c", "d"}
	t.Setenv(Env, "")
	if got := Sample(list, 0, 2, 9); !slices.Equal(got, []string{"a", "c"}) || Full() {
		t.Errorf("sampled: %v (full %v), want [a c]", got, Full())
	}
	t.Setenv(Env, "1")
	if got := Sample(list, 0); !slices.Equal(got, list) || !Full() {
		t.Errorf("full: %v (full %v), want the whole list", got, Full())
	}
}
