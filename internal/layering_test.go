// Package internal_test checks the module's layering: the packages under
// internal/ are leaf helpers, and the edge and the agent runtime meet only
// on the bus. It reads the import lines of the module's Go files (go/parser)
// and needs no build.
package internal_test

import (
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

const module = "github.com/a2amesh/a2amesh"

// internalMayImport are the module's packages (and those below them) that
// a package under internal/ may import: nothing above the protocol types,
// the bus and the embedded NATS server it runs on.
var internalMayImport = []string{"a2a", "bus", "natsnode", "taskstore", "internal"}

// TestLayering fails when a package under internal/ imports a package of
// the module above a2a and bus (edge, agentrt, registry, mesh, cmd/...),
// or when edge and agentrt import each other, directly or through other
// packages of the module. Only non-test files count: a test may import
// what it drives.
func TestLayering(t *testing.T) {
	imports := moduleImports(t, "..")
	for _, must := range []string{"edge", "agentrt", "bus", "mesh", "internal/ssrf"} {
		if _, ok := imports[must]; !ok {
			t.Fatalf("package %s not found: the walk of the module is broken (found %d packages)", must, len(imports))
		}
	}

	if !slices.Contains(imports["edge"], "bus") {
		t.Fatalf("edge imports %v, not bus: the import lines are misread", imports["edge"])
	}

	for pkg, deps := range imports {
		if !under(pkg, "internal") {
			continue
		}
		for _, dep := range deps {
			if !slices.ContainsFunc(internalMayImport, func(p string) bool { return under(dep, p) }) {
				t.Errorf("%s imports %s: packages under internal/ are leaf helpers and import only %v of the module", pkg, dep, internalMayImport)
			}
		}
	}

	for _, pair := range [][2]string{{"edge", "agentrt"}, {"agentrt", "edge"}} {
		from, to := pair[0], pair[1]
		for pkg := range imports {
			if !under(pkg, from) {
				continue
			}
			if chain := importChain(imports, pkg, to); chain != nil {
				t.Errorf("%s reaches %s (%s): the edge and the agent runtime meet only on the bus",
					pkg, to, strings.Join(chain, " -> "))
			}
		}
	}
}

// under reports whether pkg is p or a package below it.
func under(pkg, p string) bool { return pkg == p || strings.HasPrefix(pkg, p+"/") }

// importChain returns a path of imports from pkg to a package under to
// (pkg first), or nil when there is none.
func importChain(imports map[string][]string, pkg, to string) []string {
	seen := map[string]bool{}
	var walk func(p string) []string
	walk = func(p string) []string {
		if under(p, to) {
			return []string{p}
		}
		if seen[p] {
			return nil
		}
		seen[p] = true
		for _, d := range imports[p] {
			if c := walk(d); c != nil {
				return append([]string{p}, c...)
			}
		}
		return nil
	}
	return walk(pkg)
}

// moduleImports maps each package of the module below root (its path
// relative to the module) to the module's packages its non-test files
// import. Files of every build constraint count.
func moduleImports(t *testing.T, root string) map[string][]string {
	t.Helper()
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		t.Fatalf("no go.mod at the module root %s: %v", root, err)
	}
	imports := map[string][]string{}
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			if p != root && (strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_") ||
				name == "testdata" || name == "node_modules" || name == "vendor") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			return nil
		}
		rel, err := filepath.Rel(root, filepath.Dir(p))
		if err != nil {
			return err
		}
		pkg := filepath.ToSlash(rel)
		f, err := parser.ParseFile(fset, p, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		for _, spec := range f.Imports {
			ip, err := strconv.Unquote(spec.Path.Value)
			if err != nil {
				return err
			}
			if dep, ok := strings.CutPrefix(ip, module+"/"); ok && !slices.Contains(imports[pkg], dep) {
				imports[pkg] = append(imports[pkg], dep)
			}
		}
		if _, ok := imports[pkg]; !ok {
			imports[pkg] = nil
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return imports
}
