package prober

import (
	"errors"
	"net"
	"net/http"
	"strconv"
	"testing"
)

// A probe's client connects to the pod's IP and port and nowhere else, whatever URL it is
// handed (a redirect, a bug in building the URL).
func TestPodClientDialsThePodOnly(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(http.ResponseWriter, *http.Request) {})}
	go srv.Serve(l)
	t.Cleanup(func() { srv.Close() })
	port := l.Addr().(*net.TCPAddr).Port
	c := podClient("127.0.0.1", port)
	res, err := c.Get("http://127.0.0.1:" + strconv.Itoa(port) + "/")
	if err != nil {
		t.Fatalf("the pod's own address: %v", err)
	}
	res.Body.Close()
	for _, u := range []string{"http://127.0.0.2:" + strconv.Itoa(port) + "/", "http://127.0.0.1:1/", "http://localhost:" + strconv.Itoa(port) + "/"} {
		if _, err := c.Get(u); !errors.Is(err, ErrNotThePod) {
			t.Errorf("GET %s: %v, want ErrNotThePod", u, err)
		}
	}
}
