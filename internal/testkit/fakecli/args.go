package fakecli

import "strings"

// flagSet is the command line as flag → value ("" for a bare flag).
type flagSet map[string]string

func parseArgs(args []string) flagSet {
	fs := flagSet{}
	for i := 0; i < len(args); i++ {
		a := args[i]
		if !strings.HasPrefix(a, "-") {
			continue
		}
		if k, v, ok := strings.Cut(a, "="); ok {
			fs[k] = v
			continue
		}
		if i+1 < len(args) && !strings.HasPrefix(args[i+1], "-") {
			fs[a] = args[i+1]
			i++
			continue
		}
		fs[a] = ""
	}
	return fs
}

func (fs flagSet) has(k string) bool     { _, ok := fs[k]; return ok }
func (fs flagSet) value(k string) string { return fs[k] }
