// Command a2amesh runs the mesh's roles (dev, edge, worker, nats) and is a
// small A2A client (card, send, stream, get, cancel) for people without curl
// at hand.
package main

import (
	"context"
	"fmt"
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

func usage() {
	fmt.Fprintln(os.Stderr, "usage: a2amesh <command> [flags]\n\ncommands:")
	names := make([]string, 0, len(commands))
	for n := range commands {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(os.Stderr, "  %-8s %s\n", n, commands[n].help)
	}
	fmt.Fprintln(os.Stderr, "\nRun 'a2amesh <command> -h' for a command's flags.")
}

func main() {
	name, args := "dev", os.Args[1:]
	if len(args) > 0 && len(args[0]) > 0 && args[0][0] != '-' {
		name, args = args[0], args[1:]
	}
	if name == "help" || name == "-h" || name == "--help" {
		usage()
		return
	}
	cmd, ok := commands[name]
	if !ok {
		fmt.Fprintf(os.Stderr, "a2amesh: unknown command %q\n\n", name)
		usage()
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := cmd.run(ctx, args); err != nil {
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
