package ui

import (
	"errors"
	"net/http"

	"github.com/runagain/runagain/internal/dataset"
)

type datasetsView struct {
	Title    string
	None     bool
	Err      string
	Datasets []datasetView
}

type datasetView struct {
	Name     string
	Versions []*dataset.Manifest
}

type versionView struct {
	Title string
	M     *dataset.Manifest
	Cases []caseView
	Err   string
}

type caseView struct {
	ID, TraceID string
	Files       int
	Bytes       int64
	Input       string
	Expect      []string
	InStore     bool
}

// datasetsPage lists the datasets and their versions, newest first (internal/dataset).
func (s *Server) datasetsPage(w http.ResponseWriter, r *http.Request) {
	v := datasetsView{Title: "Datasets"}
	if s.opts.Datasets == nil {
		v.None = true
		s.render(w, "datasets.html", v)
		return
	}
	names, err := s.opts.Datasets.Names(r.Context())
	if err != nil {
		v.Err = err.Error()
	}
	for _, n := range names {
		vs, err := s.opts.Datasets.Versions(r.Context(), n)
		if err != nil {
			v.Err = err.Error()
			continue
		}
		v.Datasets = append(v.Datasets, datasetView{Name: n, Versions: vs})
	}
	s.render(w, "datasets.html", v)
}

// versionPage shows one version: its cases, the run each froze, their inputs and expectations.
func (s *Server) versionPage(w http.ResponseWriter, r *http.Request) {
	if s.opts.Datasets == nil {
		http.Error(w, "no dataset store", http.StatusNotFound)
		return
	}
	m, err := s.opts.Datasets.Resolve(r.Context(), r.PathValue("name")+"@"+r.PathValue("version"))
	if err != nil {
		code := http.StatusBadRequest
		if errors.Is(err, dataset.ErrNotFound) {
			code = http.StatusNotFound
		}
		http.Error(w, err.Error(), code)
		return
	}
	v := versionView{Title: "Dataset " + m.Name + "@" + dataset.Short(m.Version), M: m}
	cases, err := s.opts.Datasets.Cases(r.Context(), m)
	if err != nil {
		v.Err = err.Error()
	}
	byID := map[string]*dataset.Case{}
	for _, c := range cases {
		byID[c.ID] = c
	}
	for _, ref := range m.Cases {
		cv := caseView{ID: ref.ID, TraceID: ref.TraceID, Files: len(ref.Files)}
		for _, f := range ref.Files {
			cv.Bytes += f.Size
		}
		if c := byID[ref.ID]; c != nil && c.Expect != nil {
			cv.Input = c.Expect.Input
			for _, e := range c.Expect.Expect {
				cv.Expect = append(cv.Expect, e.Name())
			}
		}
		if _, err := s.opts.Reader.Run(r.Context(), ref.TraceID); err == nil {
			cv.InStore = true
		}
		v.Cases = append(v.Cases, cv)
	}
	s.render(w, "dataset.html", v)
}
