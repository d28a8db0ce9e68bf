package a2a_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/a2amesh/a2amesh/a2a"
)

func TestParseExtensions(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   []string
		want []string
	}{
		{"none", nil, nil},
		{"blank", []string{" , ,"}, nil},
		{"one header", []string{"urn:a, urn:b ,urn:c"}, []string{"urn:a", "urn:b", "urn:c"}},
		{"repeated header and values", []string{"urn:a,urn:b", "urn:b, urn:a", "urn:c"}, []string{"urn:a", "urn:b", "urn:c"}},
		{"too long a URI", []string{"urn:a," + strings.Repeat("x", 600)}, []string{"urn:a"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, a2a.ParseExtensions(tc.in...))
		})
	}
	var many []string
	for i := range 100 {
		many = append(many, "urn:"+strings.Repeat("e", i+1))
	}
	assert.Len(t, a2a.ParseExtensions(strings.Join(many, ",")), 32, "at most 32 are kept")
}
