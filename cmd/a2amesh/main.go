// Command a2amesh runs the mesh's roles (dev, edge, worker, nats) and is a
// small A2A client (card, send, stream, get, cancel) for people without curl
// at hand.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sort"
	"syscall"
)

// command is one subcommand: its one-line help and its entry point.
type command struct {
	help string
	run  func(ctx context.Context, args []string) error
}

// commands is filled by init functions in this package's files.
var commands = map[string]command{}

func register(name, help string, run func(ctx context.Context, args []string) error) {
	commands[name] = command{help: help, run: run}
}

// usage prints the command list to w.
func usage(w io.Writer) {
	fmt.Fprintln(w, "a2amesh: a distributed A2A mesh on NATS JetStream, and a small A2A client.\n\nusage: a2amesh <command> [flags] [arguments]\n\ncommands:")
	names := make([]string, 0, len(commands))
	for n := range commands {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(w, "  %-8s %s\n", n, commands[n].help)
	}
	fmt.Fprintf(w, "  %-8s %s\n", "help", "print this list; 'help COMMAND' prints that command's flags")
	fmt.Fprintf(w, "  %-8s %s\n", "version", "print the module version and VCS revision")
	fmt.Fprintln(w, "\nWith no command, a2amesh runs dev. Run 'a2amesh <command> -h' for a command's flags.")
}

func main() {
	name, args := "dev", os.Args[1:]
	if len(args) > 0 && len(args[0]) > 0 {
		switch a := args[0]; {
		case a[0] != '-', a == "-h", a == "--help", a == "-help", a == "--version", a == "-version":
			name, args = a, args[1:]
		}
	}
	switch name {
	case "help", "-h", "--help", "-help":
		if name == "help" && len(args) > 0 { // help CMD: CMD's -h
			if _, ok := commands[args[0]]; ok {
				name, args = args[0], append(args[1:len(args):len(args)], "-h")
				break
			}
			fmt.Fprintf(os.Stderr, "a2amesh help: unknown command %q\n\n", args[0])
			usage(os.Stderr)
			os.Exit(2)
		}
		usage(os.Stdout)
		return
	case "version", "--version", "-version":
		fmt.Println(version())
		return
	}
	cmd, ok := commands[name]
	if !ok {
		fmt.Fprintf(os.Stderr, "a2amesh: unknown command %q\n\n", name)
		usage(os.Stderr)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := cmd.run(ctx, args); err != nil {
		var ue usageError
		switch {
		case errors.Is(err, errHelpShown):
			return
		case errors.As(err, &ue):
			os.Exit(2)
		}
		fmt.Fprintf(os.Stderr, "a2amesh %s: %v\n", name, err)
		os.Exit(1)
	}
}

// envOr returns the environment variable key, or def when it is unset.
func envOr(key, def string) string {
	if v, ok := os.LookupEnv(key); ok && v != "" {
		return v
	}
	return def
}
