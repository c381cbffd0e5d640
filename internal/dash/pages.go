package dash

import (
	"bytes"
	"crypto/sha256"
	"embed"
	"encoding/json"
	"fmt"
	"html/template"
	"io/fs"
	"net/http"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"berth.io/berth/internal/rehearse/report"
	"berth.io/berth/internal/why"
)

//go:embed templates/*.html
var templateFS embed.FS

//go:embed static
var staticFS embed.FS

// The pages, by name; each has the URL /NAME ("/" for the overview) and
// its JSON at /api/NAME.
var pageNames = []string{"overview", "waiting", "activity", "workloads", "models", "rehearsals"}

var pageTitles = map[string]string{
	"overview": "Overview", "waiting": "Waiting", "activity": "Activity", "workloads": "Workloads", "models": "Models", "rehearsals": "Rehearsals",
}

// fragmentHeader asks for a page's content alone, as the page's script
// does when the server says it changed.
const fragmentHeader = "X-Berth-Fragment"

// pageSet is the parsed templates: the layout, and each page's content.
type pageSet struct {
	layout *template.Template
	pages  map[string]*template.Template
}

func newPageSet() (*pageSet, error) {
	ps := &pageSet{pages: map[string]*template.Template{}}
	var err error
	if ps.layout, err = template.New("layout.html").Funcs(funcs).ParseFS(templateFS, "templates/layout.html"); err != nil {
		return nil, err
	}
	for _, name := range append(slices.Clone(pageNames), "rehearsal") {
		t, err := template.New(name+".html").Funcs(funcs).ParseFS(templateFS, "templates/"+name+".html", "templates/parts.html")
		if err != nil {
			return nil, err
		}
		ps.pages[name] = t
	}
	return ps, nil
}

// pageData is what a page's content template is given.
type pageData struct {
	Now       time.Time
	Context   string
	Overview  *Overview
	Waiting   *waitingData
	Activity  *activityData
	Workloads *Workloads
	Reports   []Rehearsal
	Report    *Rehearsal
	// Models are the store's, read on each request; ModelStore names the
	// store, "" when none is configured.
	Models     []ModelRow
	ModelStore string
}

type waitingData struct {
	// Groups are the Pending pods by their verdict's cause.
	Groups    []waitGroup
	Workloads []waitWorkload
}

type waitGroup struct {
	Cause string
	Pods  []waitPod
}

// waitPod is a Pending pod's verdict and the pools growing for it.
type waitPod struct {
	why.Verdict
	Growing []growing
}

// growing is a pool the autoscaler grows for a pod: from its
// TriggeredScaleUp event, with the pool's size as the autoscaler's status
// has it now.
type growing struct {
	Pool            string
	From, To        int
	Ready, Upcoming int
	// Known is false when the status does not list the pool.
	Known bool
}

type waitWorkload struct {
	why.Verdict
	Holders []Holder
}

type activityData struct {
	Entries           []Entry
	Pool, Namespace   string
	Pools, Namespaces []string
}

// data is what page name shows of snap, with the request's query (the
// Activity filter); r is nil for the page as a change is measured.
func (s *Server) data(name string, snap *snapshot, r *http.Request) (*pageData, error) {
	d := &pageData{Now: snap.view.Now, Context: s.o.Context}
	switch name {
	case "overview":
		d.Overview = &snap.overview
	case "waiting":
		d.Waiting = waiting(snap.view)
	case "activity":
		a := &activityData{}
		if r != nil {
			a.Pool, a.Namespace = r.URL.Query().Get("pool"), r.URL.Query().Get("namespace")
		}
		a.Pools, a.Namespaces = activityChoices(snap.activity)
		a.Entries = filterActivity(snap.activity, a.Pool, a.Namespace)
		d.Activity = a
	case "workloads":
		d.Workloads = &snap.workloads
	case "rehearsals":
		var err error
		if d.Reports, err = rehearsals(s.o.Reports); err != nil {
			return nil, err
		}
	case "models":
		// A change in the cluster says nothing of the store: its page is
		// read when loaded, not for the hash a change is measured by.
		if r == nil {
			return d, nil
		}
		var err error
		if d.Models, err = models(r.Context(), s.o.Models); err != nil {
			return nil, err
		}
		if s.o.Models != nil {
			d.ModelStore = fmt.Sprint(s.o.Models.Store)
		}
	}
	return d, nil
}

// waiting groups why --all's verdicts as its table lists them: Pending
// pods (here by cause), then the workloads that cannot create pods.
func waiting(v *View) *waitingData {
	out := &waitingData{}
	idx := map[string]int{}
	for _, p := range v.Waiting.Pods {
		i, ok := idx[p.Top.Code]
		if !ok {
			i = len(out.Groups)
			idx[p.Top.Code] = i
			out.Groups = append(out.Groups, waitGroup{Cause: p.Top.Code})
		}
		out.Groups[i].Pods = append(out.Groups[i].Pods, waitPod{Verdict: p, Growing: growingFor(v, &p)})
	}
	for _, w := range v.Waiting.Workloads {
		ww := waitWorkload{Verdict: w}
		if w.Top.Code == why.CauseQuotaExceeded {
			ww.Holders = v.Holders[workloadNamespace(w.Workload)]
		}
		out.Workloads = append(out.Workloads, ww)
	}
	return out
}

// growingFor is the pools the autoscaler's latest TriggeredScaleUp event
// on the pod says it grows.
func growingFor(v *View, p *why.Verdict) []growing {
	var out []growing
	for _, u := range v.ScaleUps[p.Pod] {
		g := growing{Pool: u.Pool, From: u.From, To: u.To}
		if a := v.Status.Autoscaler; a != nil {
			for _, pa := range a.Pools {
				if pa.Name == u.Pool {
					g.Ready, g.Upcoming, g.Known = pa.Ready, pa.Upcoming, true
				}
			}
		}
		out = append(out, g)
	}
	return out
}

// content renders a page's content.
func (ps *pageSet) content(name string, d *pageData) ([]byte, error) {
	var b bytes.Buffer
	if err := ps.pages[name].Execute(&b, d); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// sums hash each page's content as it is without a query.
func (ps *pageSet) sums(s *Server, snap *snapshot) map[string][sha256.Size]byte {
	out := map[string][sha256.Size]byte{}
	for _, name := range pageNames {
		d, err := s.data(name, snap, nil)
		if err != nil {
			continue
		}
		b, err := ps.content(name, d)
		if err != nil {
			continue
		}
		out[name] = sha256.Sum256(b)
	}
	return out
}

type layoutData struct {
	Title, Page, Context string
	Pages                []string
	Titles               map[string]string
	Err                  string
	Body                 template.HTML
}

func (s *Server) routes(mux *http.ServeMux) {
	for _, name := range pageNames {
		url := "/" + name
		if name == "overview" {
			url = "/{$}"
		}
		mux.HandleFunc("GET "+url, func(w http.ResponseWriter, r *http.Request) { s.servePage(w, r, name) })
		mux.HandleFunc("GET /api/"+name, func(w http.ResponseWriter, r *http.Request) { s.serveJSON(w, r, name) })
	}
	mux.HandleFunc("GET /rehearsals/{name...}", s.serveRehearsal)
	mux.HandleFunc("GET /events", s.serveEvents)
	static, _ := fs.Sub(staticFS, "static")
	mux.Handle("GET /static/", http.StripPrefix("/static/", http.FileServerFS(static)))
}

func (s *Server) servePage(w http.ResponseWriter, r *http.Request, name string) {
	snap, readErr := s.current(r.Context())
	var body []byte
	if snap != nil {
		d, err := s.data(name, snap, r)
		if err == nil {
			body, err = s.pages.content(name, d)
		}
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
	}
	s.write(w, r, name, pageTitles[name], body, readErr)
}

// write sends a page's content alone when the page's script asks for it,
// else the whole page around it.
func (s *Server) write(w http.ResponseWriter, r *http.Request, name, title string, body []byte, readErr error) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	errText := ""
	if readErr != nil {
		errText = fmt.Sprintf("The cluster cannot be read (retrying every second; the figures below are from the last reading): %v", readErr)
	}
	if r.Header.Get(fragmentHeader) != "" {
		if errText != "" {
			fmt.Fprintf(w, `<p class="error" role="alert">%s</p>`, template.HTMLEscapeString(errText))
		}
		w.Write(body)
		return
	}
	l := layoutData{Title: title, Page: name, Context: s.o.Context, Pages: pageNames, Titles: pageTitles, Err: errText, Body: template.HTML(body)}
	if err := s.pages.layout.Execute(w, l); err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
	}
}

// serveJSON is a page's figures as JSON.
func (s *Server) serveJSON(w http.ResponseWriter, r *http.Request, name string) {
	snap, err := s.current(r.Context())
	if snap == nil {
		http.Error(w, fmt.Sprint(err), http.StatusServiceUnavailable)
		return
	}
	var v any
	switch name {
	case "overview":
		v = snap.overview
	case "waiting":
		v = snap.view.Waiting
	case "activity":
		v = filterActivity(snap.activity, r.URL.Query().Get("pool"), r.URL.Query().Get("namespace"))
	case "workloads":
		v = snap.workloads
	case "models":
		if v, err = models(r.Context(), s.o.Models); err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
	case "rehearsals":
		if v, err = rehearsals(s.o.Reports); err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.Encode(v)
}

// serveRehearsal shows one report: /rehearsals/NAME is the dashboard's
// page around it, /rehearsals/NAME/report.html the report's own page
// (/rehearsals/NAME/figures.html for a set of replications).
func (s *Server) serveRehearsal(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("name")
	list, err := rehearsals(s.o.Reports)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	for _, page := range []string{"report.html", report.FiguresPage} {
		dir, ok := strings.CutSuffix(name, "/"+page)
		if !ok {
			continue
		}
		for _, rep := range list {
			if rep.Name == dir && rep.HTML && rep.Page() == page {
				w.Header().Set("Content-Type", "text/html; charset=utf-8")
				http.ServeFile(w, r, filepath.Join(s.o.Reports, filepath.FromSlash(path.Clean(dir)), page))
				return
			}
		}
		http.NotFound(w, r)
		return
	}
	for _, rep := range list {
		if rep.Name == name {
			body, err := s.pages.content("rehearsal", &pageData{Report: &rep, Context: s.o.Context})
			if err != nil {
				http.Error(w, err.Error(), http.StatusInternalServerError)
				return
			}
			s.write(w, r, "rehearsals", "Rehearsal "+rep.Name, body, nil)
			return
		}
	}
	http.NotFound(w, r)
}
