// Package migrations embeds the Postgres schema: the versioned migrations, applied in order by
// goose, and the views, which are not versioned: the store re-creates them after the migrations
// (so each has one definition, and a migration never repeats one).
package migrations

import (
	"embed"
	"io/fs"
)

// FS holds every migration file (NNNNN_name.sql, goose annotations) at its root and the views
// under views/.
//
//go:embed *.sql views/*.sql
var FS embed.FS

// Views returns the statements of every view, in the order of their file names; each drops
// its view if it exists and creates it.
func Views() ([]string, error) {
	entries, err := fs.ReadDir(FS, "views")
	if err != nil {
		return nil, err
	}
	var out []string
	for _, e := range entries {
		b, err := fs.ReadFile(FS, "views/"+e.Name())
		if err != nil {
			return nil, err
		}
		out = append(out, string(b))
	}
	return out, nil
}
