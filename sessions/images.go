package sessions

import (
	"encoding/base64"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"

	"github.com/claude-agent-mcp/claude-agent-mcp/sessions/options"
	"github.com/claude-agent-mcp/claude-agent-mcp/sessions/policy"
)

// Image is an image sent with a prompt.
type Image struct {
	MediaType string // image/png, image/jpeg, image/gif or image/webp
	Data      []byte
}

// ImageInput is an image as a caller names it: a file, or base64 data with
// its media type.
type ImageInput struct {
	Path      string `json:"path,omitempty"`
	Data      string `json:"data,omitempty"`
	MediaType string `json:"mediaType,omitempty"`
}

// ImageTypes are the media types the API takes.
var ImageTypes = []string{"image/png", "image/jpeg", "image/gif", "image/webp"}

// Limits on images, per prompt.
const (
	MaxImages     = 20
	MaxImageBytes = 10 << 20
)

// LoadImages reads a query's images: files are resolved against cwd and
// must lie within the allowed roots; each image's bytes must be one of
// ImageTypes (checked from the data, not only the name) and at most
// MaxImageBytes.
func (m *Manager) LoadImages(cwd string, in []ImageInput) ([]Image, error) {
	if len(in) > MaxImages {
		return nil, fmt.Errorf("too many images: %d, at most %d per prompt", len(in), MaxImages)
	}
	var out []Image
	for i, im := range in {
		var data []byte
		what := fmt.Sprintf("images[%d]", i)
		switch {
		case im.Path != "" && im.Data != "":
			return nil, fmt.Errorf("%s: give path or data, not both", what)
		case im.Path != "":
			path := im.Path
			if !filepath.IsAbs(path) {
				path = filepath.Join(cwd, path)
			}
			if err := options.NoControl(what+" path", path); err != nil {
				return nil, err
			}
			st, err := os.Stat(path)
			if err != nil || st.IsDir() {
				return nil, fmt.Errorf("%s: %s is not a readable file", what, path)
			}
			if err := m.checkPath(what+" path", path); err != nil {
				return nil, err
			}
			if st.Size() > MaxImageBytes {
				return nil, fmt.Errorf("%s: %s has %d bytes, more than the %d an image may have", what, path, st.Size(), MaxImageBytes)
			}
			if data, err = os.ReadFile(path); err != nil {
				return nil, fmt.Errorf("%s: reading %s: %v", what, path, err)
			}
		case im.Data != "":
			var err error
			if data, err = base64.StdEncoding.DecodeString(im.Data); err != nil {
				return nil, fmt.Errorf("%s: data is not base64: %v", what, err)
			}
			if len(data) > MaxImageBytes {
				return nil, fmt.Errorf("%s: %d bytes, more than the %d an image may have", what, len(data), MaxImageBytes)
			}
		default:
			return nil, fmt.Errorf("%s: give path, or data with mediaType", what)
		}
		sniffed := http.DetectContentType(data)
		if !slices.Contains(ImageTypes, sniffed) {
			return nil, fmt.Errorf("%s: not an image of a type the model reads (%s); use PNG, JPEG, GIF or WebP", what, sniffed)
		}
		if im.MediaType != "" && im.MediaType != sniffed {
			return nil, fmt.Errorf("%s: mediaType %q does not match the data, which is %s", what, im.MediaType, sniffed)
		}
		out = append(out, Image{MediaType: sniffed, Data: data})
	}
	return out, nil
}

// userContent is the content of a user message: the text alone, or the
// text followed by image blocks.
func userContent(prompt string, images []Image) any {
	if len(images) == 0 {
		return prompt
	}
	blocks := []map[string]any{{"type": "text", "text": prompt}}
	for _, im := range images {
		blocks = append(blocks, map[string]any{"type": "image", "source": map[string]any{
			"type": "base64", "media_type": im.MediaType, "data": base64.StdEncoding.EncodeToString(im.Data)}})
	}
	return blocks
}

// LoadImages reads a query's images for s: image files pass the policy
// gate first (over HTTP they read files of the server), then see
// Manager.LoadImages.
func (s *Session) LoadImages(in []ImageInput) ([]Image, error) {
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
