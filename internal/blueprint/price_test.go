package blueprint

import "testing"

// A pool's price reads as a decimal, quoted or not, and its mistakes
// come at the line of the field they concern: the decoder's (not a
// decimal) and validation's (no spot price on a Spot pool) alike.
func TestParsePrice(t *testing.T) {
	doc := edit(t, "    autoscale: {min: 0, max: 2}\n", "    autoscale: {min: 0, max: 2}\n    price: {onDemand: 2.0144, spot: \"0.81\"}\n")
	bp, _, err := Parse("bp.yaml", []byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	if p := bp.Spec.Pools[1].Price; p == nil || p.OnDemand.String() != "2.0144" || p.Spot.String() != "0.81" {
		t.Errorf("price = %+v, want onDemand 2.0144, spot 0.81", p)
	}
	testProblems(t, []problemCase{
		{
			name:  "not a decimal",
			edits: []string{"    autoscale: {min: 0, max: 2}\n", "    autoscale: {min: 0, max: 2}\n    price:\n      onDemand: \"$3.06\"\n"},
			want:  []want{{Line: 17, Field: "spec.pools[1].price.onDemand", Message: `"$3.06" is not an amount of US dollars`, Fix: `like "3.06"`}},
		},
		{
			name:  "spot pool without a spot price",
			edits: []string{"    autoscale: {min: 0, max: 2}\n", "    autoscale: {min: 0, max: 2}\n    capacity: Spot\n    price: {onDemand: \"3.06\"}\n"},
			want:  []want{{Line: 17, Field: "spec.pools[1].price.spot", Message: "is Spot capacity", Fix: `spot: "1.10"`}},
		},
	})
}
