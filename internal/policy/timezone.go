package policy

import (
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"cel.dev/cel-go/cel"
	celenv "cel.dev/cel-go/common/env"
	"cel.dev/cel-go/common/overloads"
	"cel.dev/cel-go/common/types"
	"cel.dev/cel-go/common/types/ref"
)

// CEL's timestamp accessors with a time zone (now.getHours("America/
// New_York")) load the zone from the zoneinfo database on every call:
// the cost of a market-hours rule was mostly that. These are the same
// functions, same names, overloads and results, with zones loaded once.

// tzFunctions are the accessors taking a zone: CEL name, overload id and
// what they read of the time in that zone.
var tzFunctions = []struct {
	name, id string
	get      func(time.Time) int64
}{
	{"getFullYear", overloads.TimestampToYearWithTz, func(t time.Time) int64 { return int64(t.Year()) }},
	{"getMonth", overloads.TimestampToMonthWithTz, func(t time.Time) int64 { return int64(t.Month()) - 1 }},
	{"getDayOfYear", overloads.TimestampToDayOfYearWithTz, func(t time.Time) int64 { return int64(t.YearDay()) - 1 }},
	{"getDayOfMonth", overloads.TimestampToDayOfMonthZeroBasedWithTz, func(t time.Time) int64 { return int64(t.Day()) - 1 }},
	{"getDate", overloads.TimestampToDayOfMonthOneBasedWithTz, func(t time.Time) int64 { return int64(t.Day()) }},
	{"getDayOfWeek", overloads.TimestampToDayOfWeekWithTz, func(t time.Time) int64 { return int64(t.Weekday()) }},
	{"getHours", overloads.TimestampToHoursWithTz, func(t time.Time) int64 { return int64(t.Hour()) }},
	{"getMinutes", overloads.TimestampToMinutesWithTz, func(t time.Time) int64 { return int64(t.Minute()) }},
	{"getSeconds", overloads.TimestampToSecondsWithTz, func(t time.Time) int64 { return int64(t.Second()) }},
	{"getMilliseconds", overloads.TimestampToMillisecondsWithTz, func(t time.Time) int64 { return int64(t.Nanosecond() / 1e6) }},
}

// stdLibWithoutZones is CEL's standard library minus those overloads.
func stdLibWithoutZones() cel.EnvOption {
	var exclude []*celenv.Function
	for _, f := range tzFunctions {
		exclude = append(exclude, celenv.NewFunction(f.name, &celenv.Overload{ID: f.id}))
	}
	return cel.StdLib(cel.StdLibSubset(&celenv.LibrarySubset{ExcludeFunctions: exclude}))
}

// zoneFunctions declares them again, with cached zones.
func zoneFunctions() []cel.EnvOption {
	var out []cel.EnvOption
	for _, f := range tzFunctions {
		get := f.get
		out = append(out, cel.Function(f.name, cel.MemberOverload(f.id, []*cel.Type{cel.TimestampType, cel.StringType}, cel.IntType,
			cel.BinaryBinding(func(ts, tz ref.Val) ref.Val {
				t, ok := ts.(types.Timestamp)
				z, ok2 := tz.(types.String)
				if !ok || !ok2 {
					return types.NewErrFromString("a timestamp and a time zone name are required")
				}
				loc, err := zone(string(z))
				if err != nil {
					return types.NewErrFromString(err.Error())
				}
				return types.Int(get(t.Time.In(loc)))
			}))))
	}
	return out
}

// maxZones bounds the zone cache (zones written in rules are few; one
// taken from a feed's value could be anything).
const maxZones = 64

var zones sync.Map // name -> *time.Location

var zoneCount int64
var zoneMu sync.Mutex

// zone is a time zone by IANA name, or a fixed "+05:30"-style offset, as
// CEL reads them.
func zone(name string) (*time.Location, error) {
	if l, ok := zones.Load(name); ok {
		return l.(*time.Location), nil
	}
	var loc *time.Location
	if i := strings.Index(name, ":"); i >= 0 {
		hr, err1 := strconv.Atoi(name[:i])
		mn, err2 := strconv.Atoi(name[i+1:])
		if err1 != nil || err2 != nil || hr < -23 || hr > 23 || mn < 0 || mn > 59 {
			return nil, fmt.Errorf("invalid time zone offset %q (want ±HH:MM)", name)
		}
		off := hr*3600 + mn*60
		if strings.HasPrefix(name, "-") {
			off = hr*3600 - mn*60
		}
		loc = time.FixedZone(name, off)
	} else {
		l, err := time.LoadLocation(name)
		if err != nil {
			return nil, err
		}
		loc = l
	}
	zoneMu.Lock()
	if zoneCount < maxZones {
		zones.Store(name, loc)
		zoneCount++
	}
	zoneMu.Unlock()
	return loc, nil
}
