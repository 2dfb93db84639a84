package federated

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
)

// Provider holds one party's records and answers the coordinator's round
// messages from them. Requests and replies are plain data (no functions, no
// channels, no pointers into the provider), so a network transport can carry
// them.
//
// A reply is what leaves the provider: it must be exactly what the protocol
// allows the coordinator to see (for DPS-PCA a noisy product, for FedRep a
// gradient that the trusted coordinator clips and noises). Answer is called
// for one request at a time per provider.
type Provider[Req, Rep any] interface {
	Answer(ctx context.Context, req Req) (Rep, error)
}

// Transport carries the rounds of a protocol. The coordinator of a mechanism
// sees the providers only through it.
type Transport[Req, Rep any] interface {
	// Providers returns the number of providers (public).
	Providers() int
	// Round sends req to every provider and calls recv(i, reply of provider
	// i) for i = 0, 1, …, Providers()−1 in that order, on the caller's
	// goroutine. It stops at the first error of a provider, of recv or of
	// ctx, and returns it.
	Round(ctx context.Context, req Req, recv func(i int, rep Rep) error) error
}

// Local is the in-process Transport. Providers answer concurrently on
// Workers goroutines, in blocks of consecutive providers; the replies are
// delivered in provider order while later blocks are still being computed,
// and at most a few blocks per worker are held in memory at once (FedRep's
// d×d initialisation messages from 20000 users never coexist).
type Local[Req, Rep any] struct {
	providers []Provider[Req, Rep]
	workers   int
	block     int
}

// NewLocal returns the in-process transport over providers, using every
// core. It keeps the slice; providers must not be nil.
func NewLocal[Req, Rep any](providers []Provider[Req, Rep]) *Local[Req, Rep] {
	return &Local[Req, Rep]{providers: providers, workers: runtime.GOMAXPROCS(0)}
}

// WithWorkers returns a copy of l using w goroutines (w ≥ 1).
func (l *Local[Req, Rep]) WithWorkers(w int) *Local[Req, Rep] {
	c := *l
	c.workers = max(1, w)
	return &c
}

// Providers implements Transport.
func (l *Local[Req, Rep]) Providers() int { return len(l.providers) }

// blockSize picks how many consecutive providers one goroutine answers before
// handing the block over: about 16 blocks per worker, at most 256 providers.
func (l *Local[Req, Rep]) blockSize() int {
	if l.block > 0 {
		return l.block
	}
	n := len(l.providers)
	return min(256, max(1, n/(16*max(1, l.workers))))
}

type blockResult[Rep any] struct {
	reps []Rep
	err  error
}

// errProviderPanic is wrapped when a provider panics; the panic value is not
// reported because it could carry the provider's private data.
var errProviderPanic = errors.New("provider panicked")

// Round implements Transport.
func (l *Local[Req, Rep]) Round(ctx context.Context, req Req, recv func(i int, rep Rep) error) error {
	n := len(l.providers)
	if n == 0 {
		return nil
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	bs := l.blockSize()
	nb := (n + bs - 1) / bs
	workers := min(max(1, l.workers), nb)

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	slots := make([]chan blockResult[Rep], nb)
	for i := range slots {
		slots[i] = make(chan blockResult[Rep], 1)
	}
	// tokens bounds the blocks computed but not yet consumed. Blocks are
	// claimed in increasing order, so the next block the consumer waits for
	// always holds a token and is being computed: no deadlock.
	tokens := make(chan struct{}, 2*workers)
	var next atomic.Int64
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case tokens <- struct{}{}:
				case <-ctx.Done():
					return
				}
				b := int(next.Add(1) - 1)
				if b >= nb {
					<-tokens
					return
				}
				slots[b] <- l.answerBlock(ctx, req, b*bs, min(n, (b+1)*bs))
			}
		}()
	}

	var err error
consume:
	for b := range nb {
		var r blockResult[Rep]
		select {
		case r = <-slots[b]:
		case <-ctx.Done():
			err = ctx.Err()
			break consume
		}
		<-tokens
		if r.err != nil {
			err = r.err
			break
		}
		for j, rep := range r.reps {
			if err = recv(b*bs+j, rep); err != nil {
				break consume
			}
		}
	}
	cancel()
	wg.Wait()
	return err
}

// answerBlock asks providers lo..hi−1 in order.
func (l *Local[Req, Rep]) answerBlock(ctx context.Context, req Req, lo, hi int) (res blockResult[Rep]) {
	i := lo
	defer func() {
		if r := recover(); r != nil {
			res = blockResult[Rep]{err: fmt.Errorf("federated: provider %d: %w", i, errProviderPanic)}
		}
	}()
	reps := make([]Rep, 0, hi-lo)
	for ; i < hi; i++ {
		if err := ctx.Err(); err != nil {
			return blockResult[Rep]{err: err}
		}
		rep, err := l.providers[i].Answer(ctx, req)
		if err != nil {
			return blockResult[Rep]{err: fmt.Errorf("federated: provider %d: %w", i, err)}
		}
		reps = append(reps, rep)
	}
	return blockResult[Rep]{reps: reps}
}

// Party is a Provider that reports its public schema: the number of
// columns (features) of its records.
type Party[Req, Rep any] interface {
	Provider[Req, Rep]
	Dim() int
}

// Parties checks a coordinator's list of providers, of pointer type P
// (*PCAProvider, *fedrep.User): at least one, none nil, all with the
// dimension of the first. It returns them as Providers, for NewLocal, and
// that dimension. name ("provider", "user") and unit ("columns",
// "features") word the errors.
func Parties[T any, Req, Rep any, P interface {
	*T
	Party[Req, Rep]
}](ps []P, name, unit string) ([]Provider[Req, Rep], int, error) {
	if len(ps) == 0 {
		return nil, 0, fmt.Errorf("no %ss", name)
	}
	out := make([]Provider[Req, Rep], len(ps))
	d := 0
	for i, p := range ps {
		if p == nil {
			return nil, 0, fmt.Errorf("%s %d is nil", name, i)
		}
		if i == 0 {
			d = p.Dim()
		} else if p.Dim() != d {
			return nil, 0, fmt.Errorf("%s %d has %d %s, %s 0 has %d: all %ss must share the schema", name, i, p.Dim(), unit, name, d, name)
		}
		out[i] = p
	}
	return out, d, nil
}
