package ui_test

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/schedlens/schedlens/internal/api"
	"github.com/schedlens/schedlens/internal/api/apitest"
	"github.com/schedlens/schedlens/internal/pgtest"
	"github.com/schedlens/schedlens/internal/ui"
)

// The README's and docs' screenshots (docs/img) are made by `make screenshots`: the lab demo
// fills a database of its own, then TestScreenshots, given that database and the demo's
// namespace, photographs the views in Chromium and records in docs/img/screenshots.json the
// digest of the UI's sources it photographed. Run without them (as `make test` does), the test
// fails when the UI's sources no longer have that digest: a view changed and its pictures
// were not made again.
const (
	imgDir             = "../../docs/img"
	screenshotsRecord  = imgDir + "/screenshots.json"
	envScreenshotsDB   = "SCHEDLENS_SCREENSHOTS_DATABASE_URL"
	envScreenshotsNS   = "SCHEDLENS_SCREENSHOTS_NAMESPACE"
	envScreenshotsProd = "SCHEDLENS_SCREENSHOTS_WORKLOAD_NAMESPACE"
	screenshotsCommand = "make screenshots"
)

// screenshotsMade is docs/img/screenshots.json.
type screenshotsMade struct {
	// Views is the digest of the UI's templates, assets and Go sources the pictures show.
	Views string `json:"views"`
	// Made is when, and From which command, they were made.
	Made  time.Time `json:"made"`
	From  string    `json:"from"`
	Files []string  `json:"files"`
}

// viewsDigest is the SHA-256 of every file that draws the UI (templates, static assets, the
// package's Go files but its tests), by path and content, in path order.
func viewsDigest(t *testing.T) string {
	t.Helper()
	var files []string
	for _, pattern := range []string{"templates/*", "static/*", "*.go"} {
		m, err := filepath.Glob(pattern)
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range m {
			if !strings.HasSuffix(f, "_test.go") {
				files = append(files, f)
			}
		}
	}
	slices.Sort(files)
	h := sha256.New()
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		h.Write([]byte(filepath.ToSlash(f) + "\x00"))
		h.Write(b)
		h.Write([]byte{0})
	}
	return hex.EncodeToString(h.Sum(nil))
}

func TestScreenshots(t *testing.T) {
	dbURL, ns := os.Getenv(envScreenshotsDB), os.Getenv(envScreenshotsNS)
	if dbURL == "" {
		checkScreenshotsFresh(t)
		return
	}
	if ns == "" {
		t.Fatalf("%s is set but %s is not: the demo's namespace picks its runs", envScreenshotsDB, envScreenshotsNS)
	}
	db := pgtest.Open(t, dbURL)
	web, err := ui.New(db, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	srv := apitest.Serve(t, db, api.WithUI(web))
	ctx := browser(t)
	q := "?" + url.Values{"namespace": {ns}}.Encode()
	prod := os.Getenv(envScreenshotsProd)
	if prod == "" {
		t.Fatalf("%s is not set: the namespace of the demo's unlabelled workload", envScreenshotsProd)
	}
	// The top of each page, as a reader first sees it (a whole experiment page is ~10,000 px).
	shots := []struct {
		file, path string
		height     int64
	}{
		{"experiment.png", "/ui/experiments/day20" + q, 1900},
		{"run-timeline.png", "/ui/experiments/day20/runs/1" + q, 1500},
		// The demo's unlabelled Deployment (its own namespace, not the runs'), its last two minutes:
		// the scenario ran moments before.
		{"workload.png", "/ui/workloads/" + url.PathEscape(prod) + "/Deployment/infer?from=-2m", 1500},
		{"disruptions.png", "/ui/disruptions?" + url.Values{"namespace": {prod}}.Encode(), 900},
	}
	made := screenshotsMade{Views: viewsDigest(t), Made: time.Now().UTC().Truncate(time.Second), From: screenshotsCommand}
	for _, s := range shots {
		do(t, ctx, chromedp.EmulateViewport(1400, s.height), chromedp.Navigate(srv.URL+s.path), chromedp.WaitVisible(chromedp.CSS(`main`)))
		png, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
		if err != nil {
			t.Fatalf("screenshot %s: %v", s.path, err)
		}
		if err := os.WriteFile(filepath.Join(imgDir, s.file), png, 0o644); err != nil {
			t.Fatal(err)
		}
		made.Files = append(made.Files, s.file)
		t.Logf("%s ← %s", filepath.Join("docs/img", s.file), s.path)
	}
	b, err := json.MarshalIndent(made, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(screenshotsRecord, append(b, '\n'), 0o644); err != nil {
		t.Fatal(err)
	}
}

// checkScreenshotsFresh fails when the UI's sources changed since docs/img was made.
func checkScreenshotsFresh(t *testing.T) {
	b, err := os.ReadFile(screenshotsRecord)
	if err != nil {
		t.Fatalf("read %s: %v (make them: %s)", screenshotsRecord, err, screenshotsCommand)
	}
	var made screenshotsMade
	if err := json.Unmarshal(b, &made); err != nil {
		t.Fatalf("%s: %v", screenshotsRecord, err)
	}
	if got := viewsDigest(t); got != made.Views {
		t.Errorf("the UI's views changed since docs/img was made (%s): make the screenshots again with `%s`", made.Made.Format(time.RFC3339), screenshotsCommand)
	}
	for _, f := range made.Files {
		if _, err := os.Stat(filepath.Join(imgDir, f)); err != nil {
			t.Errorf("%s lists %s: %v", screenshotsRecord, f, err)
		}
	}
}
