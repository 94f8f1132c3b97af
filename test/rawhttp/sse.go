package rawhttp

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"time"

	"github.com/raftlock/raftlock/api"
)

// StreamBuffer is how many lines of an open stream are kept for the reader; later lines
// are dropped while it is full (a test that opens streams only to hold their slots
// never reads them).
const StreamBuffer = 1024

// OpenStream opens a server-sent event stream (GET url) and returns its lines as they
// arrive; the channel closes when the stream ends or stop is called. why is "" when the
// stream is open, else the status or error that refused it (lines and stop are nil then).
// The stream has no timeout of its own: the client's Timeout would cut it.
func (c Client) OpenStream(url string) (lines <-chan string, stop func(), why string) {
	ctx, cancel := context.WithCancel(context.Background())
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		cancel()
		return nil, nil, err.Error()
	}
	if c.Token != "" {
		req.Header.Set(api.AuthorizationHeader, "Bearer "+c.Token)
	}
	hc := &http.Client{}
	if c.HTTP != nil {
		hc.Transport = c.HTTP.Transport
	}
	resp, err := hc.Do(req)
	if err != nil {
		cancel()
		return nil, nil, err.Error()
	}
	if resp.StatusCode != http.StatusOK {
		resp.Body.Close()
		cancel()
		return nil, nil, resp.Status
	}
	out := make(chan string, StreamBuffer)
	go func() {
		defer close(out)
		defer resp.Body.Close()
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			select {
			case out <- sc.Text():
			default:
			}
		}
	}()
	return out, cancel, ""
}

// StreamEnd reads a stream's lines until it ends or timeout passes. It returns the code of
// the stream's last SSE error event ("" for none), whether any data line contained
// forbidden, and whether the stream ended (false: still open after timeout).
func StreamEnd(lines <-chan string, forbidden string, timeout time.Duration) (code string, leaked, ended bool) {
	deadline := time.After(timeout)
	inError := false
	for {
		select {
		case line, ok := <-lines:
			if !ok {
				return code, leaked, true
			}
			data, isData := strings.CutPrefix(line, "data: ")
			if isData && strings.Contains(data, forbidden) {
				leaked = true
			}
			switch {
			case line == "event: error":
				inError = true
			case inError && isData:
				var eb api.ErrorBody
				_ = json.Unmarshal([]byte(data), &eb)
				code, inError = eb.Error.Code, false
			}
		case <-deadline:
			return code, leaked, false
		}
	}
}
