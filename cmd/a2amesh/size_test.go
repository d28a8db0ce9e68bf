package main

import "testing"

func TestParseSize(t *testing.T) {
	for in, want := range map[string]int64{
		"0": 0, "1048576": 1 << 20, "512M": 512 << 20, "512MB": 512 << 20, "8g": 8 << 30,
		"1.5GiB": 3 << 29, "64 K": 64 << 10, "2T": 2 << 40,
	} {
		got, err := parseSize(in)
		if err != nil || got != want {
			t.Errorf("parseSize(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"", "M", "-1G", "ten", "1X", "1e30"} {
		if _, err := parseSize(in); err == nil {
			t.Errorf("parseSize(%q): no error", in)
		}
	}
}
