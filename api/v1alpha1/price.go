package v1alpha1

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"berth.io/berth/internal/problem"
)

// Price is what one node of a pool costs, in US dollars per node-hour,
// for `berth rehearse`'s cost report. Nothing else reads it: the local
// cluster's nodes, `berth export` (a cloud bills by its own prices, and
// no artifact carries one) and audit ignore it.
type Price struct {
	// OnDemand is an on-demand node-hour ("3.06"). Required. On a Spot
	// pool it is what the same node-hours would have cost on demand, the
	// base of the report's spot savings.
	OnDemand Dollars `json:"onDemand"`
	// Spot is a spot node-hour ("1.10"). Required on a Spot pool; on an
	// OnDemand pool it is never used (a warning says so), which lets a
	// design flip a pool's capacity without rewriting its price.
	Spot Dollars `json:"spot,omitempty"`
}

// Dollars is an amount of US dollars, held exactly in millionths (the
// precision Google Cloud quotes its prices in). A blueprint writes it as
// a decimal, quoted or not: "3.06", 0.0832, "98.32". It is read once
// (UnmarshalJSON) and written back as a quoted decimal (MarshalJSON), so
// a recorded blueprint reads as the file did. The zero value is nothing
// given.
type Dollars int64

// dollarsRE is a decimal of at most 9 whole digits and 6 decimals: no
// sign, exponent, currency symbol or thousands separator.
var dollarsRE = regexp.MustCompile(`^([0-9]{1,9})(?:\.([0-9]{1,6}))?$`)

// ParseDollars reads a decimal amount of US dollars ("3.06"). Its error
// is a *problem.Problem that says how to write one.
func ParseDollars(s string) (Dollars, error) {
	m := dollarsRE.FindStringSubmatch(s)
	if m == nil {
		return 0, problem.New(`write dollars as a decimal with at most 6 places, like "3.06"`, fmt.Sprintf("%q is not an amount of US dollars", s))
	}
	whole, _ := strconv.ParseInt(m[1], 10, 64)
	frac, _ := strconv.ParseInt((m[2] + "000000")[:6], 10, 64)
	return Dollars(whole*1_000_000 + frac), nil
}

// MustParseDollars is ParseDollars for amounts written in code: it
// panics on a bad one.
func MustParseDollars(s string) Dollars {
	d, err := ParseDollars(s)
	if err != nil {
		panic(err)
	}
	return d
}

// Micros is the amount in millionths of a dollar.
func (d Dollars) Micros() int64 { return int64(d) }

// String writes the amount as a decimal with at least two places and no
// trailing zeros beyond them: "3.06", "0.0832", "98.00".
func (d Dollars) String() string {
	sign := ""
	if d < 0 {
		sign, d = "-", -d
	}
	frac := strings.TrimRight(fmt.Sprintf("%06d", int64(d)%1_000_000), "0")
	for len(frac) < 2 {
		frac += "0"
	}
	return fmt.Sprintf("%s%d.%s", sign, int64(d)/1_000_000, frac)
}

// MarshalJSON writes the amount as a quoted decimal.
func (d Dollars) MarshalJSON() ([]byte, error) { return json.Marshal(d.String()) }

// UnmarshalJSON reads a decimal, quoted or a bare JSON number; its error
// is ParseDollars'.
func (d *Dollars) UnmarshalJSON(data []byte) error {
	s := string(data)
	if strings.HasPrefix(s, `"`) {
		if err := json.Unmarshal(data, &s); err != nil {
			return err
		}
	}
	v, err := ParseDollars(s)
	if err != nil {
		return err
	}
	*d = v
	return nil
}

func validatePrice(pp *field.Path, p *Pool) (errs, warnings problem.List) {
	pr := p.Price
	if pr == nil {
		return nil, nil
	}
	path := pp.Child("price")
	if pr.OnDemand <= 0 {
		errs = append(errs, invalid(path.Child("onDemand"), "an on-demand price greater than zero is required", `give what one node-hour costs on demand, in US dollars, like onDemand: "3.06"`))
	}
	switch {
	case pr.Spot < 0:
		errs = append(errs, invalid(path.Child("spot"), "must not be negative", `give what one spot node-hour costs, in US dollars, like spot: "1.10"`))
	case p.Capacity == Spot && pr.Spot == 0:
		errs = append(errs, invalid(path.Child("spot"), fmt.Sprintf("pool %s is Spot capacity, and its node-hours cost the spot price", p.Name), `add what one spot node-hour costs, in US dollars, like spot: "1.10"; or remove price for berth's price table`))
	case p.Capacity != Spot && pr.Spot != 0:
		warnings = append(warnings, warning(path.Child("spot"), fmt.Sprintf("pool %s is %s capacity: its spot price is never used", p.Name, p.Capacity), "remove spot, or set capacity: Spot"))
	case pr.OnDemand > 0 && pr.Spot > pr.OnDemand:
		warnings = append(warnings, warning(path.Child("spot"), fmt.Sprintf("the spot price (%s) is above the on-demand price (%s), so spot would cost more, not save", pr.Spot, pr.OnDemand), "check both prices: spot is usually well below on-demand"))
	}
	return errs, warnings
}
