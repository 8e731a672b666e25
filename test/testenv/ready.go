package testenv

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
)

// WaitReady polls a readiness endpoint (e.g. a controller's /readyz) until
// it answers 200 OK, or fails after timeout.
func WaitReady(ctx context.Context, url string, timeout time.Duration) error {
	err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, timeout, true,
		func(context.Context) (bool, error) {
			resp, err := http.Get(url)
			if err != nil {
				return false, nil
			}
			resp.Body.Close()
			return resp.StatusCode == http.StatusOK, nil
		})
	if err != nil {
		return fmt.Errorf("wait for %s: %w", url, err)
	}
	return nil
}
