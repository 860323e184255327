package audit

import (
	"errors"
	"strconv"
	"strings"
)

// Cost is what a model call (or a turn's calls) cost, written as
// cost_usd: omitted when nothing was costed (the zero Cost: no model
// call), null when the model has no price (the record then also says
// cost_unknown: true), else the amount in US dollars, exact to the
// micro-dollar. Amounts are kept in integer micro-USD.
type Cost struct {
	// MicroUSD is the amount in millionths of a dollar; meaningful when
	// Known.
	MicroUSD int64
	Known    bool
	set      bool
}

// KnownCost is an amount of micro-USD.
func KnownCost(micro int64) Cost { return Cost{MicroUSD: micro, Known: true, set: true} }

// UnknownCost is the cost of a call to a model with no price.
func UnknownCost() Cost { return Cost{set: true} }

// IsZero reports whether nothing was costed (omitzero leaves it out).
func (c Cost) IsZero() bool { return !c.set }

// Add is c and d together: unknown when either is, costed when either is.
func (c Cost) Add(d Cost) Cost {
	switch {
	case !c.set:
		return d
	case !d.set:
		return c
	case !c.Known || !d.Known:
		return Cost{set: true, MicroUSD: c.MicroUSD + d.MicroUSD}
	}
	return KnownCost(c.MicroUSD + d.MicroUSD)
}

// Unknown reports a cost recorded as unknown (cost_unknown: true).
func (c Cost) Unknown() bool { return c.set && !c.Known }

// AppendJSON appends c as MarshalJSON writes it.
func (c Cost) AppendJSON(b []byte) []byte {
	if !c.Known {
		return append(b, "null"...)
	}
	return AppendUSD(b, c.MicroUSD)
}

// MarshalJSON writes the dollars, or null.
func (c Cost) MarshalJSON() ([]byte, error) { return c.AppendJSON(nil), nil }

// UnmarshalJSON reads dollars, or null (unknown).
func (c *Cost) UnmarshalJSON(b []byte) error {
	s := strings.TrimSpace(string(b))
	if s == "null" {
		*c = UnknownCost()
		return nil
	}
	v, err := ParseUSD(s)
	if err != nil {
		return err
	}
	*c = KnownCost(v)
	return nil
}

// AppendUSD appends micro-USD as a decimal number of dollars with the
// decimals it needs (at least two): 1500000 → 1.50, 1234 → 0.001234.
func AppendUSD(b []byte, micro int64) []byte {
	if micro < 0 {
		b, micro = append(b, '-'), -micro
	}
	b = strconv.AppendInt(b, micro/1_000_000, 10)
	frac := micro % 1_000_000
	digits := []byte{'.', 0, 0, 0, 0, 0, 0}
	for i := 6; i >= 1; i-- {
		digits[i] = byte('0' + frac%10)
		frac /= 10
	}
	n := 7
	for n > 3 && digits[n-1] == '0' {
		n--
	}
	return append(b, digits[:n]...)
}

// FormatUSD is AppendUSD as a string.
func FormatUSD(micro int64) string { return string(AppendUSD(nil, micro)) }

// ParseUSD reads a decimal number of dollars ("3", "0.30", "-1.5") into
// micro-USD, exactly: at most six decimals, no exponent, at most a
// billion dollars either way.
func ParseUSD(s string) (int64, error) {
	neg := strings.HasPrefix(s, "-")
	if neg {
		s = s[1:]
	}
	whole, frac, dot := strings.Cut(s, ".")
	if whole == "" || (dot && frac == "") || len(frac) > 6 || len(whole) > 10 {
		return 0, errUSD
	}
	var v int64
	for i := 0; i < len(whole)+6; i++ {
		c := byte('0')
		switch {
		case i < len(whole):
			c = whole[i]
		case i-len(whole) < len(frac):
			c = frac[i-len(whole)]
		}
		if c < '0' || c > '9' {
			return 0, errUSD
		}
		v = v*10 + int64(c-'0')
	}
	if v > 1_000_000_000*1_000_000 {
		return 0, errUSD
	}
	if neg {
		v = -v
	}
	return v, nil
}

var errUSD = errors.New("not an amount in USD: write a decimal number such as 3.50, with at most six decimals and at most a billion")
