package web

import (
	"net/http"

	"github.com/reverie-ai/reverie/extensions/web/page"
)

// pageHandler serves the web page (the app shell at / and its embedded
// assets under /static/) for every path that is not /healthz or under
// /api/. The page needs no token: it holds no data, it asks the API.
func pageHandler() http.Handler { return page.Handler() }
