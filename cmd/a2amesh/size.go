package main

import (
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// sizeFlag is a byte count given as a number with an optional unit: 512M,
// 10G, 1.5GiB, 1048576 (K, M, G, T are powers of 1024, as in nats-server's
// max_file_store).
type sizeFlag struct {
	n int64
	// envErr is an unreadable value of the flag's environment variable,
	// reported by Bytes unless the flag was given.
	envErr error
}

func (s *sizeFlag) String() string {
	if s == nil {
		return "0"
	}
	return strconv.FormatInt(s.n, 10)
}

func (s *sizeFlag) Set(v string) error {
	n, err := parseSize(v)
	if err != nil {
		return err
	}
	s.n, s.envErr = n, nil
	return nil
}

// Bytes is the size given, or the error of an unreadable environment
// variable.
func (s *sizeFlag) Bytes() (int64, error) { return s.n, s.envErr }

// parseSize reads a byte count with an optional unit (K, M, G, T; an
// optional B or iB after it; any case).
func parseSize(v string) (int64, error) {
	t := strings.ToUpper(strings.TrimSpace(v))
	t = strings.TrimSuffix(strings.TrimSuffix(t, "B"), "I")
	mult := int64(1)
	if n := len(t); n > 0 {
		switch t[n-1] {
		case 'K':
			mult = 1 << 10
		case 'M':
			mult = 1 << 20
		case 'G':
			mult = 1 << 30
		case 'T':
			mult = 1 << 40
		}
		if mult > 1 {
			t = strings.TrimSpace(t[:n-1])
		}
	}
	f, err := strconv.ParseFloat(t, 64)
	if err != nil || f < 0 || f*float64(mult) > 1<<62 {
		return 0, fmt.Errorf("invalid size %q: want bytes, or a number with K, M, G or T", v)
	}
	return int64(f * float64(mult)), nil
}

// sizeVar defines a size flag whose default comes from the environment
// variable env when set.
func sizeVar(fs *flag.FlagSet, name, env, usage string) *sizeFlag {
	s := new(sizeFlag)
	if v := os.Getenv(env); v != "" {
		if err := s.Set(v); err != nil {
			s.envErr = fmt.Errorf("%s: %w", env, err)
		}
	}
	fs.Var(s, name, usage)
	return s
}
