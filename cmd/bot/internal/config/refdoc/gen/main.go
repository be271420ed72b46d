// Command gen writes the configuration reference, docs/configuration.md
// and docs/configuration.zh-CN.md (see package refdoc). Run it from
// anywhere in the module: `make docs`, or
// go run ./cmd/bot/internal/config/refdoc/gen. With -zh-reviewed it first
// records that refdoc/zh.yaml follows the English comments as they are
// now (refdoc.SumFile); without it, a comment changed since its Chinese
// was written is an error.
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"github.com/hitlbot/hitlbot/cmd/bot/internal/config/refdoc"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

func run() error {
	reviewed := flag.Bool("zh-reviewed", false, "record that refdoc/zh.yaml follows the English comments as they are now (write "+refdoc.SumFile+"), then generate")
	flag.Parse()
	root, err := moduleRoot()
	if err != nil {
		return err
	}
	if *reviewed {
		keys, err := refdoc.Keys(root)
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(root, refdoc.SumFile), refdoc.Sums(keys), 0o644); err != nil {
			return err
		}
		fmt.Println("wrote", refdoc.SumFile)
	}
	files, err := refdoc.Generate(root)
	if err != nil {
		return err
	}
	for _, name := range []string{refdoc.FileEN, refdoc.FileZH} {
		if err := os.WriteFile(filepath.Join(root, name), files[name], 0o644); err != nil {
			return err
		}
		fmt.Println("wrote", name)
	}
	return nil
}

// moduleRoot is the nearest directory up from here holding go.mod.
func moduleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		up := filepath.Dir(dir)
		if up == dir {
			return "", fmt.Errorf("no go.mod above the working directory")
		}
		dir = up
	}
}
