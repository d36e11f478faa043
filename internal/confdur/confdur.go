// SPDX-License-Identifier: Apache-2.0

// Package confdur names the duration settings a collector configuration gets wrong, and the
// keys that name no setting.
//
// The collector decodes durations with go-viper/mapstructure, which drops the value from the
// error (`'retention' time: invalid duration`), so whoever wrote `retention: 7d` is not told that
// 7d is the problem or what to write instead. Check walks a component's configuration type and
// the raw section beside it and, for every time.Duration setting whose value time.ParseDuration
// refuses, names its full path, the value and what Go accepts.
package confdur // import "github.com/runagain/runagain/internal/confdur"

import (
	"errors"
	"fmt"
	"reflect"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/agnivade/levenshtein"
	"go.opentelemetry.io/collector/confmap"
)

var durationType = reflect.TypeOf(time.Duration(0))

// daysRE is a value in days, the unit Go's durations lack.
var daysRE = regexp.MustCompile(`^(\d+)\s*d$`)

// Check returns an error naming each duration setting of conf (a component's raw section) whose
// value is a string that time.ParseDuration refuses, or a number other than 0 (which the decoder
// would take as nanoseconds: `window: 10` is 10ns): "hot::retention: "7d" is not a duration
// (Go durations: 300ms, 90s, 30m, 168h; days are hours: 7d is 168h)". cfg is the component's
// configuration, a pointer to its struct; mapstructure tags give the names, squashed and
// configoptional.Optional fields are followed. nil when every duration parses.
func Check(conf *confmap.Conf, cfg any) error {
	if conf == nil {
		return nil
	}
	t := reflect.TypeOf(cfg)
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == nil || t.Kind() != reflect.Struct {
		return nil
	}
	var errs []string
	walk(t, conf.ToStringMap(), "", &errs, 0)
	if len(errs) == 0 {
		return nil
	}
	sort.Strings(errs)
	out := make([]error, len(errs))
	for i, e := range errs {
		out[i] = errors.New(e)
	}
	return errors.Join(out...)
}

func walk(t reflect.Type, raw map[string]any, prefix string, errs *[]string, depth int) {
	if depth > 16 {
		return
	}
	names := map[string]reflect.Type{}
	settings(t, names, 0)
	for k, v := range raw {
		ft, ok := names[strings.ToLower(k)]
		if !ok {
			continue
		}
		path := prefix + k
		switch {
		case ft == durationType:
			switch x := v.(type) {
			case string:
				if _, err := time.ParseDuration(x); err != nil {
					*errs = append(*errs, explain(path, x))
				}
			case int, int64, uint64, float64:
				// the decoder would take 10 as 10 nanoseconds
				if fmt.Sprint(x) != "0" {
					*errs = append(*errs, fmt.Sprintf("%s: %v is a number, not a duration: give its unit (%vs, %vm, %vh; Go durations, 0 stays 0)", path, x, x, x, x))
				}
			}
		case ft.Kind() == reflect.Struct:
			if m, ok := v.(map[string]any); ok {
				walk(ft, m, path+"::", errs, depth+1)
			}
		case ft.Kind() == reflect.Map && ft.Elem().Kind() == reflect.Struct:
			if m, ok := v.(map[string]any); ok {
				for mk, e := range m {
					if em, ok := e.(map[string]any); ok {
						walk(ft.Elem(), em, path+"::"+mk+"::", errs, depth+1)
					}
				}
			}
		case ft.Kind() == reflect.Slice && ft.Elem().Kind() == reflect.Struct:
			if l, ok := v.([]any); ok {
				for n, e := range l {
					if em, ok := e.(map[string]any); ok {
						walk(ft.Elem(), em, path+"::"+strconv.Itoa(n)+"::", errs, depth+1)
					}
				}
			}
		}
	}
}

// optionalValue is T for configoptional.Optional[T] (its field value), and t otherwise.
func optionalValue(t reflect.Type) reflect.Type {
	if t.Kind() == reflect.Struct && t.PkgPath() == "go.opentelemetry.io/collector/config/configoptional" && strings.HasPrefix(t.Name(), "Optional[") {
		if f, ok := t.FieldByName("value"); ok {
			return f.Type
		}
	}
	return t
}

// explain says why s is not a duration and what to write.
func explain(path, s string) string {
	msg := fmt.Sprintf("%s: %q is not a duration (Go durations: 300ms, 90s, 30m, 168h", path, s)
	if m := daysRE.FindStringSubmatch(strings.TrimSpace(s)); m != nil {
		if n, err := strconv.Atoi(m[1]); err == nil {
			return msg + fmt.Sprintf("; days are hours: %s is %dh)", strings.TrimSpace(s), 24*n)
		}
	}
	if _, err := strconv.ParseFloat(strings.TrimSpace(s), 64); err == nil {
		return msg + "; a number needs its unit)"
	}
	return msg + ")"
}

// Explain returns err, the collector decoder's error for conf decoded into cfg, with a line
// before it for each key of conf that names no setting of cfg: its full path and the nearest
// setting of the same section ("hot::retentoin: no such setting (did you mean retention?)"); the
// decoder names a Go type instead ('runagainstorageextension.HotConfig' has invalid keys:
// retentoin). Sections whose keys are free (maps, a ",remain" field) are not judged. err as it is
// when nothing is found or err is nil.
func Explain(conf *confmap.Conf, cfg any, err error) error {
	if err == nil || conf == nil || !strings.Contains(err.Error(), "invalid keys") {
		return err
	}
	t := reflect.TypeOf(cfg)
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == nil || t.Kind() != reflect.Struct {
		return err
	}
	var lines []string
	unknown(t, conf.ToStringMap(), "", &lines, 0)
	if len(lines) == 0 {
		return err
	}
	sort.Strings(lines)
	out := make([]error, 0, len(lines)+1)
	for _, l := range lines {
		out = append(out, errors.New(l))
	}
	return errors.Join(append(out, err)...)
}

// settings adds to names the settings of struct t (lower-cased mapstructure names, squashed
// structs and configoptional.Optional values followed) with their types, and reports whether t
// also takes any other key (a ",remain" field). Check and Explain both read a section through it.
func settings(t reflect.Type, names map[string]reflect.Type, depth int) (free bool) {
	if depth > 16 {
		return true
	}
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		name, opts, _ := strings.Cut(f.Tag.Get("mapstructure"), ",")
		if name == "-" {
			continue
		}
		if strings.Contains(opts, "remain") {
			free = true
			continue
		}
		ft := optionalValue(f.Type)
		if strings.Contains(opts, "squash") {
			if ft.Kind() == reflect.Struct && settings(ft, names, depth+1) {
				free = true
			}
			continue
		}
		if name == "" {
			if !f.IsExported() {
				continue
			}
			name = f.Name // mapstructure's default: the field name, matched case-insensitively
		}
		names[strings.ToLower(name)] = ft
	}
	return free
}

func unknown(t reflect.Type, raw map[string]any, prefix string, lines *[]string, depth int) {
	names := map[string]reflect.Type{}
	if settings(t, names, 0) || depth > 16 {
		return
	}
	for k, v := range raw {
		ft, ok := names[strings.ToLower(k)]
		if !ok {
			*lines = append(*lines, fmt.Sprintf("%s%s: no such setting%s", prefix, k, suggest(k, names)))
			continue
		}
		if m, ok := v.(map[string]any); ok && ft.Kind() == reflect.Struct {
			unknown(ft, m, prefix+k+"::", lines, depth+1)
		}
	}
}

// suggest names the setting of names nearest to k, when one is within a third of its length
// (at least 1, at most 3 edits: Levenshtein distance, github.com/agnivade/levenshtein), else
// lists the settings when there are few.
func suggest(k string, names map[string]reflect.Type) string {
	best, bestD := "", 1<<30
	for n := range names {
		if d := levenshtein.ComputeDistance(strings.ToLower(k), n); d < bestD || d == bestD && n < best {
			best, bestD = n, d
		}
	}
	if best != "" && bestD <= min(3, max(1, len(k)/3)) {
		return " (did you mean " + best + "?)"
	}
	if len(names) > 0 && len(names) <= 12 {
		all := make([]string, 0, len(names))
		for n := range names {
			all = append(all, n)
		}
		sort.Strings(all)
		return " (the settings here: " + strings.Join(all, ", ") + ")"
	}
	return ""
}

// Decode is a component's Config.Unmarshal: Check, then the collector's decoding of conf into
// cfg, its error explained (Explain).
func Decode(conf *confmap.Conf, cfg any) error {
	if err := Check(conf, cfg); err != nil {
		return err
	}
	return Explain(conf, cfg, conf.Unmarshal(cfg))
}
