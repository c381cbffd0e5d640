package dash

import (
	"net"
	"net/http"
	"net/url"
	"strings"
)

// guard refuses a request whose Host, or Origin when it has one, is not
// the address the server listens on or the loopback names for its port.
// A page of another site that a DNS name of its own has made resolve to
// 127.0.0.1 (DNS rebinding) sends its own name as Host, and is refused;
// so is a script of another origin.
func guard(listen string, next http.Handler) http.Handler {
	allowed := allowedHosts(listen)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !allowed(r.Host) {
			http.Error(w, "refused: Host "+r.Host+" is not this dashboard's address (berth dash answers only to the address it listens on)", http.StatusForbidden)
			return
		}
		if o := r.Header.Get("Origin"); o != "" {
			u, err := url.Parse(o)
			if err != nil || (u.Scheme != "http" && u.Scheme != "https") || !allowed(u.Host) {
				http.Error(w, "refused: Origin "+o+" is not this dashboard's", http.StatusForbidden)
				return
			}
		}
		w.Header().Set("X-Frame-Options", "SAMEORIGIN")
		w.Header().Set("X-Content-Type-Options", "nosniff")
		next.ServeHTTP(w, r)
	})
}

// allowedHosts says whether a Host names the listen address: itself, or
// localhost, 127.0.0.1 or [::1] with its port; on an address that listens
// everywhere (0.0.0.0, [::]), any IP address with its port, which no DNS
// name can stand for.
func allowedHosts(listen string) func(string) bool {
	host, port, err := net.SplitHostPort(listen)
	if err != nil {
		return func(string) bool { return false }
	}
	everywhere := host == "" || net.ParseIP(host) != nil && net.ParseIP(host).IsUnspecified()
	return func(h string) bool {
		hh, hp, err := net.SplitHostPort(h)
		if err != nil {
			hh, hp = h, "80"
		}
		if hp != port {
			return false
		}
		hh = strings.TrimSuffix(strings.ToLower(hh), ".")
		switch {
		case hh == strings.ToLower(host), hh == "localhost", hh == "127.0.0.1", hh == "::1":
			return true
		case everywhere:
			return net.ParseIP(hh) != nil
		}
		return false
	}
}
