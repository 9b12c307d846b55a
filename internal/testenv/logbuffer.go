package testenv

import (
	"bytes"
	"sync"
)

// LogBuffer is a log destination that one side writes while another reads (a process's output,
// a component's slog handler, read by the test that started it): a bytes.Buffer safe for
// concurrent Write and String. Its zero value is ready.
type LogBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *LogBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

// String returns everything written so far.
func (s *LogBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
