package service

import (
	"bytes"
	"context"
	"io"
	"strings"
	"testing"

	"google.golang.org/grpc"

	pb "github.com/privnotes/privnotes/api/privnotes/v1"
)

// TestLoggingNamesTheCall: the request log line names the call id of
// every request that has one, FedCommit and FedAbort (FedCallRef)
// included, and quotes an id that is not a plain token, so that no
// request can forge a log line.
func TestLoggingNamesTheCall(t *testing.T) {
	var buf bytes.Buffer
	SetLog(&buf)
	t.Cleanup(func() { SetLog(io.Discard) })
	ok := func(ctx context.Context, req any) (any, error) { return nil, nil }
	cases := []struct {
		method string
		req    any
		want   string
	}{
		{"/privnotes.v1.DataService/Execute", &pb.CallRequest{CallId: "c-1", Function: "private_count", Dataset: "d"}, `Execute private_count("d") call c-1: OK`},
		{"/privnotes.v1.DataService/FedPrepare", &pb.CallRequest{CallId: "c-2", Function: "private_pca", Dataset: "d"}, `FedPrepare private_pca("d") call c-2: OK`},
		{"/privnotes.v1.DataService/FedCommit", &pb.FedCallRef{CallId: "c-3"}, "FedCommit call c-3: OK"},
		{"/privnotes.v1.DataService/FedAbort", &pb.FedCallRef{CallId: "c-4"}, "FedAbort call c-4: OK"},
		{"/privnotes.v1.DataService/FedAbort", &pb.FedCallRef{CallId: "c-5\nforged: OK"}, `FedAbort call "c-5\nforged: OK": OK`},
		{"/privnotes.v1.DataService/FedCommit", &pb.FedCallRef{CallId: strings.Repeat("x", 1000)}, `FedCommit call "xxx`},
	}
	for _, c := range cases {
		buf.Reset()
		if _, err := logging(context.Background(), c.req, &grpc.UnaryServerInfo{FullMethod: c.method}, ok); err != nil {
			t.Fatal(err)
		}
		line := buf.String()
		if !strings.Contains(line, c.want) || strings.Count(line, "\n") != 1 {
			t.Errorf("%s: log %q does not say %q on one line", c.method, line, c.want)
		}
		if len(line) > 400 {
			t.Errorf("%s: a log line of %d bytes", c.method, len(line))
		}
	}
}
