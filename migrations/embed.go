// Package migrations embeds the Postgres schema migrations, applied in order by goose.
package migrations

import "embed"

// FS holds every migration file (NNNNN_name.sql, goose annotations).
//
//go:embed *.sql
var FS embed.FS
