package web

import (
	"fmt"
	"net/http"
	"strings"

	"github.com/reverie-ai/reverie/api"
)

// Handlers of the data dir's history: the list of changes, one change with
// its diff, and restoring one while the agent runs. They answer 501 when
// the history is not offered (versioning could not be opened).

// maxRevLen bounds a {rev} path value (a full hash is 40 characters).
const maxRevLen = 100

// revParam reads and checks the {rev} path value: a hash, a prefix of one,
// HEAD or a name, with git's ~N and ^N suffixes.
func revParam(r *http.Request) (string, error) {
	rev := r.PathValue("rev")
	switch {
	case rev == "":
		return "", fmt.Errorf("%w: no revision given", api.ErrInvalid)
	case len(rev) > maxRevLen:
		return "", fmt.Errorf("%w: revision longer than %d characters", api.ErrInvalid, maxRevLen)
	}
	for _, c := range rev {
		ok := c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || strings.ContainsRune("~^@._-", c)
		if !ok {
			return "", fmt.Errorf("%w: %q is not a revision (a hash, a short hash or HEAD~N)", api.ErrInvalid, rev)
		}
	}
	return rev, nil
}

func (w *Web) listHistory(rw http.ResponseWriter, r *http.Request) {
	s := w.svc.History
	q := query{r: r}
	path := strings.TrimSpace(q.str("path"))
	limit := int(q.int("limit", 50, 1, 1000))
	if len(path) > 4096 || strings.ContainsRune(path, 0) {
		q.fail("path is not a data-dir path")
	}
	if q.err != nil {
		w.serviceError(rw, r, q.err)
		return
	}
	revs, err := s.List(r.Context(), api.HistoryQuery{Path: path, Limit: limit})
	for i := range revs {
		revs[i].Files = nonNil(revs[i].Files)
	}
	w.reply(rw, r, api.RevisionList{Revisions: nonNil(revs)}, err)
}

func (w *Web) getRevision(rw http.ResponseWriter, r *http.Request) {
	s := w.svc.History
	rev, err := revParam(r)
	if err != nil {
		w.serviceError(rw, r, err)
		return
	}
	d, err := s.Get(r.Context(), rev)
	d.Files = nonNil(d.Files)
	w.reply(rw, r, d, err)
}

func (w *Web) restoreRevision(rw http.ResponseWriter, r *http.Request) {
	s := w.svc.History
	rev, err := revParam(r)
	if err != nil {
		w.serviceError(rw, r, err)
		return
	}
	res, err := s.Restore(r.Context(), rev)
	res.Target.Files = nonNil(res.Target.Files)
	if res.Revision != nil {
		res.Revision.Files = nonNil(res.Revision.Files)
	}
	w.reply(rw, r, res, err)
}
