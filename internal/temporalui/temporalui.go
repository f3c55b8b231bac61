// Package temporalui serves Temporal's own Web UI — event histories, stack
// traces, retries, pending activities — for Vibe's engine, as `temporal
// server start-dev` does for its dev server. The UI is
// github.com/temporalio/ui-server/v2 used as a library: its compiled
// assets are embedded in that module, so nothing is built or fetched at
// run time.
package temporalui

import (
	"crypto/subtle"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/labstack/echo/v4/middleware"
	"github.com/temporalio/ui-server/v2/server/config"
	"github.com/temporalio/ui-server/v2/server/csrf"
	"github.com/temporalio/ui-server/v2/server/route"
	"github.com/temporalio/ui-server/v2/ui"

	"github.com/augceo/vibe/internal/origin"
	"github.com/augceo/vibe/internal/throttle"
)

// Options says which engine the UI shows.
type Options struct {
	// Frontend is the engine's gRPC frontend, HOST:PORT.
	Frontend string
	// Namespace is the namespace the UI opens on; "" means "default".
	Namespace string
	// CertFile, KeyFile and CAFile are the client certificate, its key and
	// the CA that mutual TLS with the frontend takes (an embedded engine's
	// engine.ClientCertFiles); all empty for a plaintext frontend.
	CertFile, KeyFile, CAFile string
	// Token, when set, is the server's token: the UI answers only a
	// request that carries it as "Authorization: Bearer <token>" (wrong
	// ones throttled as the API throttles them) or that Session admits,
	// and refuses the others with 401, naming SignIn. The UI lists every
	// workflow with its prompts and can terminate them: on a server with a
	// token, any process of the machine must not reach it without it.
	Token string
	// Session reports whether r carries a session of the server's sign-in
	// (the console's cookie: a browser sends it to every port of the same
	// host). Nil admits none.
	Session func(r *http.Request) bool
	// SignIn is where a browser signs in (the console's /signin), for the
	// refusal's message.
	SignIn string
}

// Handler returns the UI's handler. It answers only requests addressed to
// a loopback name: the UI has no sign-in of its own and can cancel,
// signal and terminate workflows, so it must not be reachable from
// another machine, nor — by DNS rebinding — from a web page through the
// person's browser. Serve it on a loopback address. With Options.Token it
// also takes the server's sign-in: the token, or the console's session.
//
// The UI is assembled here from ui-server's own routes rather than with its
// server.NewServer, whose Start ends the whole program (log.Fatal) when its
// port is taken and whose handler is not reachable to be guarded.
func Handler(opts Options) (http.Handler, error) {
	if opts.Frontend == "" {
		return nil, errors.New("temporal ui: no frontend address")
	}
	ns := opts.Namespace
	if ns == "" {
		ns = "default"
	}
	cfg := &config.Config{
		TemporalGRPCAddress: opts.Frontend,
		DefaultNamespace:    ns,
		EnableUI:            true,
		HideLogs:            true,
		// Nothing leaves the machine: no release check, no news feed.
		DisableNewsFetch:   true,
		NotifyOnNewVersion: false,
		Distribution:       "vibe",
		// The UI is served over plain HTTP on loopback: its CSRF cookie
		// must not demand HTTPS, or the browser would never send it back.
		CORS: config.CORS{CookieInsecure: true},
		TLS:  config.TLS{CertFile: opts.CertFile, KeyFile: opts.KeyFile, CaFile: opts.CAFile, EnableHostVerification: opts.CAFile != ""},
	}
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("temporal ui: %w", err)
	}
	provider, err := config.NewConfigProviderWithRefresh(cfg)
	if err != nil {
		return nil, fmt.Errorf("temporal ui: %w", err)
	}
	assets, err := ui.Assets()
	if err != nil {
		return nil, fmt.Errorf("temporal ui: %w", err)
	}
	if assets, err = fs.Sub(assets, "local"); err != nil {
		return nil, fmt.Errorf("temporal ui: %w", err)
	}

	// What ui-server's server.NewServer sets up, less the request log.
	e := echo.New()
	e.HideBanner, e.HidePort = true, true
	e.Use(middleware.Recover())
	e.Use(middleware.Gzip())
	e.Use(middleware.Secure())
	e.Use(csrf.EnsureTokenCookie(false))
	e.Use(middleware.CSRFWithConfig(csrf.MiddlewareConfig(provider, false)))
	route.SetHealthRoute(e)
	if err := route.SetAPIRoutes(e, provider, nil); err != nil {
		return nil, fmt.Errorf("temporal ui: %w", err)
	}
	route.SetAuthRoutes(e, provider)
	route.SetUIRoutes(e, cfg.PublicPath, assets, provider)
	route.SetRenderRoute(e, "/")
	var tries throttle.Limiter
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !origin.LoopbackHost(r.Host) {
			http.Error(w, fmt.Sprintf("refused: the request is addressed to %q, not to a loopback address; Temporal's UI answers only on this machine", r.Host), http.StatusForbidden)
			return
		}
		if opts.Token != "" && !signedIn(w, r, opts, &tries) {
			return
		}
		e.ServeHTTP(w, r)
	}), nil
}

// signedIn reports whether r carries the token or a session
// (Options.Token); when it does not, it has answered r with the refusal.
func signedIn(w http.ResponseWriter, r *http.Request, opts Options, tries *throttle.Limiter) bool {
	if got, ok := r.Header["Authorization"]; ok {
		right, wait := tries.Guess(throttle.Client(r), time.Now(), func() bool {
			return len(got) == 1 && subtle.ConstantTimeCompare([]byte(got[0]), []byte("Bearer "+opts.Token)) == 1
		})
		if wait > 0 {
			w.Header().Set("Retry-After", throttle.RetryAfter(wait))
			http.Error(w, "too many wrong tokens from your address: try again in "+throttle.RetryAfter(wait)+" s", http.StatusTooManyRequests)
			return false
		}
		if right {
			return true
		}
	}
	if opts.Session != nil && opts.Session(r) {
		return true
	}
	where := "the console's sign-in"
	if opts.SignIn != "" {
		where += " (" + opts.SignIn + ")"
	}
	w.Header().Set("WWW-Authenticate", `Bearer realm="vibe"`)
	http.Error(w, "Temporal's UI is behind vibe serve's sign-in: sign in at "+where+" and come back, or send Authorization: Bearer <token>", http.StatusUnauthorized)
	return false
}
