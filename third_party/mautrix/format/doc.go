// Package format contains utilities for working with Matrix HTML, specifically
// methods to parse Markdown into HTML and to parse Matrix HTML into text or markdown.
//
// https://spec.matrix.org/v1.2/client-server-api/#mroommessage-msgtypes
package format
