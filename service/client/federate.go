package client

// The two-phase open of a federated call at one server (service/federate.go):
// FedPrepare reserves the call's cost in the server's ledger, FedCommit
// turns the reservation into the charge, FedAbort releases it.

import (
	"context"
	"fmt"
	"time"

	pb "github.com/privnotes/privnotes/api/privnotes/v1"
	"github.com/privnotes/privnotes/dsl/release"
)

// FedPrepare has the server plan call and reserve its cost under call's
// id until the returned expiry; nothing is charged or read. It is retried
// with the call's id while the server is unreachable, up to the client's
// timeout (the server reserves an id once).
func (c *Client) FedPrepare(ctx context.Context, call release.Call) (time.Time, error) {
	req, err := c.request(call)
	if err != nil {
		return time.Time{}, err
	}
	ctx, cancel := context.WithTimeout(ctx, c.timeout())
	defer cancel()
	var r *pb.FedPrepareReply
	err = c.invoke(ctx, func(ctx context.Context) (err error) {
		r, err = c.api.FedPrepare(ctx, req)
		return err
	})
	if err != nil {
		e, _ := c.remoteErr(err, fmt.Sprintf("nothing was charged there (call id %s)", call.ID))
		return time.Time{}, e
	}
	return time.UnixMilli(r.GetExpiresUnixMs()).UTC(), nil
}

// FedCommit has the server charge the reservation of a prepared call and
// ready its data. It is retried with the call's id while the server is
// unreachable (the server commits an id once).
func (c *Client) FedCommit(ctx context.Context, call release.Call) (*release.Receipt, error) {
	return c.chargeCall(ctx, call.ID, func(ctx context.Context) (*pb.ReceiptReply, error) {
		return c.api.FedCommit(ctx, &pb.FedCallRef{CallId: call.ID})
	})
}

// FedAbort has the server release the reservation of a prepared call.
func (c *Client) FedAbort(ctx context.Context, call release.Call) error {
	ctx, cancel := context.WithTimeout(ctx, c.timeout())
	defer cancel()
	err := c.invoke(ctx, func(ctx context.Context) error {
		_, err := c.api.FedAbort(ctx, &pb.FedCallRef{CallId: call.ID})
		return err
	})
	if err != nil {
		e, _ := c.remoteErr(err, fmt.Sprintf("its reservation of call %s, if any, lapses at its expiry", call.ID))
		return e
	}
	return nil
}
