package main

import (
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestRepositoryIsSelfContained: no file of the repository refers to a
// document the repository does not hold. The product documents the
// project was written from are not part of it; the rules the code relies
// on are stated where they are used or in docs/ (docs/api.md), so a file
// naming one of those documents, or a path beside the repository, sends
// its reader nowhere. And every docs/ page a file names is there.
func TestRepositoryIsSelfContained(t *testing.T) {
	t.Parallel()
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	// Built from parts, so that this file does not name them itself.
	outside := []string{"SPEC" + ".md", "DESIGN" + ".md", "STYLE" + ".md", "../" + "shared/", "/work/" + "shared"}
	docsPage := regexp.MustCompile(`\bdocs/[A-Za-z0-9_-]+\.md\b`)
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			switch d.Name() {
			case ".git", "node_modules", "data", "bin", "devicesim-state":
				return filepath.SkipDir
			}
			return nil
		}
		if !d.Type().IsRegular() {
			return nil
		}
		raw, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if bytes.IndexByte(raw, 0) >= 0 {
			return nil // not text
		}
		rel, _ := filepath.Rel(root, path)
		text := string(raw)
		for _, name := range outside {
			if i := strings.Index(text, name); i >= 0 {
				t.Errorf("%s:%d names %s, which the repository does not hold", rel, 1+strings.Count(text[:i], "\n"), name)
			}
		}
		if !strings.Contains(text, "docs/") {
			return nil // most files name no page, and the expression is slow to run over them
		}
		for _, page := range docsPage.FindAllString(text, -1) {
			if _, err := os.Stat(filepath.Join(root, page)); err != nil {
				t.Errorf("%s names %s, which the repository does not hold", rel, page)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
