// Package wgsl holds the WGSL shaders of lathe's wgpu backend, one
// text/template per kernel family, and renders them: a family is
// specialised by dtype and layout when the backend first needs it (a new
// dtype is a line in the backend's table, not a copied shader).
//
// Every template sees the prelude (prelude.wgsl): the parameter binding,
// the workgroup size and the strided-index helper, so that each launch
// contract is stated once.
package wgsl

import (
	"embed"
	"strings"
	"sync"
	"text/template"
)

//go:embed *.wgsl
var files embed.FS

var (
	parseOnce sync.Once
	templates *template.Template
	parseErr  error
)

// Render executes the template name (a file's {{define}}) with data and
// returns the WGSL source, prelude included.
func Render(name string, data any) (string, error) {
	parseOnce.Do(func() {
		templates, parseErr = template.New("wgsl").Option("missingkey=error").ParseFS(files, "*.wgsl")
	})
	if parseErr != nil {
		return "", parseErr
	}
	var b strings.Builder
	if err := templates.ExecuteTemplate(&b, name, data); err != nil {
		return "", err
	}
	return b.String(), nil
}
