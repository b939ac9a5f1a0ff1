// Package images loads the images a caller sends with a prompt — files
// resolved against the session's directory, or base64 data — checking
// their count, size and type from the data, and renders a prompt with its
// images as the content of a user message.
//
// It checks paths only through the function its caller gives (the policy
// gate's allowed roots); it must not know sessions, the policy, the CLI's
// process or MCP.
package images

import (
	"encoding/base64"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"path/filepath"
	"slices"

	"github.com/claude-agent-mcp/claude-agent-mcp/internal/beneath"
	"github.com/claude-agent-mcp/claude-agent-mcp/sessions/options"
)

// Image is an image sent with a prompt.
type Image struct {
	MediaType string // image/png, image/jpeg, image/gif or image/webp
	Data      []byte
}

// Input is an image as a caller names it: a file, or base64 data with
// its media type.
type Input struct {
	Path      string `json:"path,omitempty"`
	Data      string `json:"data,omitempty"`
	MediaType string `json:"mediaType,omitempty"`
}

// Types are the media types the API takes.
var Types = []string{"image/png", "image/jpeg", "image/gif", "image/webp"}

// Limits on images, per prompt.
const (
	MaxCount = 20
	MaxBytes = 10 << 20
)

// Load reads a query's images: files are resolved against cwd and must
// pass checkPath (the allowed roots); each image's bytes must be one of
// Types (checked from the data, not only the name) and at most MaxBytes.
func Load(cwd string, in []Input, checkPath func(what, path string) error) ([]Image, error) {
	if len(in) > MaxCount {
		return nil, fmt.Errorf("too many images: %d, at most %d per prompt", len(in), MaxCount)
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
			// The gate first: nothing is told of a path outside the roots.
			if err := checkPath(what+" path", path); err != nil {
				return nil, err
			}
			var err error
			if data, err = readImage(path); err != nil {
				return nil, fmt.Errorf("%s: %s %v", what, path, err)
			}
		case im.Data != "":
			var err error
			if data, err = base64.StdEncoding.DecodeString(im.Data); err != nil {
				return nil, fmt.Errorf("%s: data is not base64: %v", what, err)
			}
			if len(data) > MaxBytes {
				return nil, fmt.Errorf("%s: %d bytes, more than the %d an image may have", what, len(data), MaxBytes)
			}
		default:
			return nil, fmt.Errorf("%s: give path, or data with mediaType", what)
		}
		sniffed := http.DetectContentType(data)
		if !slices.Contains(Types, sniffed) {
			return nil, fmt.Errorf("%s: not an image of a type the model reads (%s); use PNG, JPEG, GIF or WebP", what, sniffed)
		}
		if im.MediaType != "" && im.MediaType != sniffed {
			return nil, fmt.Errorf("%s: mediaType %q does not match the data, which is %s", what, im.MediaType, sniffed)
		}
		out = append(out, Image{MediaType: sniffed, Data: data})
	}
	return out, nil
}

// readImage reads the image file at path, which the session may have
// written: its links resolved (as the gate judged it), then opened without
// following one (a link planted since is refused), a regular file of one
// link, at most MaxBytes.
func readImage(path string) ([]byte, error) {
	real, err := beneath.Real(path)
	if err != nil {
		return nil, errors.New("is not a readable file")
	}
	data, err := beneath.ReadFile(real, MaxBytes)
	switch {
	case errors.Is(err, beneath.ErrTooLarge):
		return nil, fmt.Errorf("has more than the %d bytes an image may have", MaxBytes)
	case errors.Is(err, beneath.ErrNotRegular) || errors.Is(err, fs.ErrNotExist):
		return nil, errors.New("is not a readable file")
	case err != nil:
		return nil, fmt.Errorf("cannot be read: %v", err)
	}
	return data, nil
}

// Content is the content of a user message: the text alone, or the text
// followed by image blocks.
func Content(prompt string, images []Image) any {
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
