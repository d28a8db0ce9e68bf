package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"strings"
)

// newFlagSet returns a flag set for a command whose -h prints, on stdout,
// a one-line description, a usage line naming the arguments, and every
// flag with its default. Parse it with parseFlags. desc's first line is
// the description; more text after a blank line is printed below the
// usage line, before the flags.
//
//	fs := newFlagSet("trace", "TRACE_ID|TASK_ID", "print a trace tree from Jaeger")
func newFlagSet(name, args, desc string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard) // parseFlags prints usage itself, to the right stream
	fs.Usage = func() {
		w := fs.Output()
		line := "a2amesh " + name + " [flags]"
		if args != "" {
			line += " " + args
		}
		summary, more, _ := strings.Cut(desc, "\n\n")
		fmt.Fprintf(w, "%s\n\nusage: %s\n", summary, line)
		if more = strings.TrimSpace(more); more != "" {
			fmt.Fprintf(w, "\n%s\n", more)
		}
		n := 0
		fs.VisitAll(func(*flag.Flag) { n++ })
		if n > 0 {
			fmt.Fprintln(w, "\nflags:")
			fs.PrintDefaults()
		}
	}
	return fs
}

// errHelpShown is returned by parseFlags after -h printed the usage; main
// exits 0 on it.
var errHelpShown = errors.New("help shown")

// parseFlags parses args into fs (a command taking no arguments). On
// -h/--help it prints the usage on stdout and returns errHelpShown; on a
// bad flag or a stray argument it prints the usage on stderr and returns
// a usageError (main exits 2).
func parseFlags(fs *flag.FlagSet, args []string) error {
	if parseHook != nil {
		return parseHook(fs, args)
	}
	return parseFlagsN(fs, args, 0, "")
}

// parseFlagsN is parseFlags for a command taking exactly n arguments
// after its flags, named what in the error when they are missing.
func parseFlagsN(fs *flag.FlagSet, args []string, n int, what string) error {
	err := fs.Parse(args)
	switch {
	case err != nil:
	case fs.NArg() > n && n == 0:
		err = fmt.Errorf("unexpected arguments: %v", fs.Args())
	case fs.NArg() > n:
		err = fmt.Errorf("want %s, got %d arguments: %v", what, fs.NArg(), fs.Args())
	case fs.NArg() < n:
		err = fmt.Errorf("want %s", what)
	}
	switch {
	case err == nil:
		return nil
	case errors.Is(err, flag.ErrHelp):
		fs.SetOutput(os.Stdout)
		fs.Usage()
		return errHelpShown
	default:
		fs.SetOutput(os.Stderr)
		fmt.Fprintf(os.Stderr, "a2amesh %s: %v\n\n", fs.Name(), err)
		fs.Usage()
		return usageError{err}
	}
}

// usageError is a command-line mistake: main exits 2 without printing it
// again.
type usageError struct{ error }

func (e usageError) Unwrap() error { return e.error }

// version returns the module version and VCS revision the binary was
// built from, as far as the build info knows them.
func version() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "a2amesh (no build info)"
	}
	return versionOf(bi)
}

// versionOf formats what bi says of the build: "a2amesh VERSION [revision
// REV [(modified)] [(TIME)]] GOVERSION".
func versionOf(bi *debug.BuildInfo) string {
	v := bi.Main.Version
	if v == "" {
		v = "(devel)"
	}
	var rev, when string
	dirty := false
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.time":
			when = s.Value
		case "vcs.modified":
			dirty = s.Value == "true"
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "a2amesh %s", v)
	if rev != "" {
		fmt.Fprintf(&b, " revision %s", rev)
		if dirty {
			b.WriteString(" (modified)")
		}
		if when != "" {
			fmt.Fprintf(&b, " (%s)", when)
		}
	}
	fmt.Fprintf(&b, " %s", bi.GoVersion)
	return b.String()
}
