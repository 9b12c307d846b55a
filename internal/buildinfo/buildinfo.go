// Package buildinfo says which build of schedlens is running.
package buildinfo

import (
	"runtime/debug"
	"sync"
)

// Version is the schedlens module's version as built: a tag, or the VCS revision (with
// "+modified" when the tree had uncommitted changes); "devel" when unknown (go test, or a build
// outside a repository).
var Version = sync.OnceValue(func() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "devel"
	}
	if v := bi.Main.Version; v != "" && v != "(devel)" {
		return v
	}
	var rev, modified string
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			modified = s.Value
		}
	}
	switch {
	case rev == "":
		return "devel"
	case modified == "true":
		return rev + "+modified"
	}
	return rev
})
