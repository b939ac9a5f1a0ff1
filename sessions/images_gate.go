package sessions

import (
	"fmt"
	"path/filepath"

	"github.com/claude-agent-mcp/claude-agent-mcp/sessions/images"
	"github.com/claude-agent-mcp/claude-agent-mcp/sessions/policy"
)

// A query's images (package images loads them) pass the policy gate: a
// file must lie within the allowed roots, and over HTTP reading one is a
// use the policy classes.

// LoadImages reads a query's images (see images.Load), their files within
// the allowed roots.
func (m *Manager) LoadImages(cwd string, in []images.Input) ([]images.Image, error) {
	return images.Load(cwd, in, m.checkPath)
}

// LoadImages reads a query's images for s: image files pass the policy
// gate first (over HTTP they read files of the server), then see
// Manager.LoadImages.
func (s *Session) LoadImages(in []images.Input) ([]images.Image, error) {
	cwd := s.Info().Cwd
	var uses []policy.Use
	for i, im := range in {
		if im.Path == "" {
			continue
		}
		path := im.Path
		if !filepath.IsAbs(path) {
			path = filepath.Join(cwd, path)
		}
		uses = append(uses, policy.ImagePath(fmt.Sprintf("images[%d] path", i), path))
	}
	if len(uses) > 0 {
		if err := s.gateChange("", nil, uses); err != nil {
			return nil, err
		}
	}
	return s.m.LoadImages(cwd, in)
}
