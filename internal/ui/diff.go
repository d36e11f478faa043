package ui

import "net/http"

type diffView struct {
	Title string
	A, B  string
	Err   string
}

// diffPage shows two runs side by side (internal/diff, once on main).
func (s *Server) diffPage(w http.ResponseWriter, r *http.Request) {
	v := diffView{Title: "Diff", A: r.URL.Query().Get("a"), B: r.URL.Query().Get("b")}
	s.render(w, "diff.html", v)
}
