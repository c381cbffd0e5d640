package audit

import (
	"io"
	"net/url"
	"path/filepath"
	"strings"

	"berth.io/berth/internal/version"
)

// The SARIF 2.1.0 subset berth writes. Field names follow the OASIS
// standard (https://docs.oasis-open.org/sarif/sarif/v2.1.0/).
type (
	sarifLog struct {
		Schema  string     `json:"$schema"`
		Version string     `json:"version"`
		Runs    []sarifRun `json:"runs"`
	}
	sarifRun struct {
		Tool sarifTool `json:"tool"`
		// Results is never nil: a clean run has results [].
		Results []sarifResult `json:"results"`
	}
	sarifTool struct {
		Driver sarifDriver `json:"driver"`
	}
	sarifDriver struct {
		Name           string      `json:"name"`
		InformationURI string      `json:"informationUri"`
		Version        string      `json:"version"`
		Rules          []sarifRule `json:"rules"`
	}
	sarifRule struct {
		ID                   string      `json:"id"`
		Name                 string      `json:"name"`
		ShortDescription     *sarifText  `json:"shortDescription,omitempty"`
		FullDescription      *sarifText  `json:"fullDescription,omitempty"`
		Help                 *sarifText  `json:"help,omitempty"`
		DefaultConfiguration sarifConfig `json:"defaultConfiguration"`
	}
	sarifConfig struct {
		Level string `json:"level"`
	}
	sarifText struct {
		Text string `json:"text"`
	}
	sarifResult struct {
		RuleID    string          `json:"ruleId"`
		RuleIndex int             `json:"ruleIndex"`
		Level     string          `json:"level"`
		Message   sarifText       `json:"message"`
		Locations []sarifLocation `json:"locations"`
		// Properties holds the finding's field, when it has one.
		Properties map[string]string `json:"properties,omitempty"`
	}
	sarifLocation struct {
		// PhysicalLocation is nil for a finding on a live cluster.
		PhysicalLocation *sarifPhysical `json:"physicalLocation,omitempty"`
		LogicalLocations []sarifLogical `json:"logicalLocations"`
	}
	sarifPhysical struct {
		ArtifactLocation sarifArtifact `json:"artifactLocation"`
		// Region is nil when the line is not known.
		Region *sarifRegion `json:"region,omitempty"`
	}
	sarifArtifact struct {
		URI string `json:"uri"`
	}
	sarifRegion struct {
		StartLine int `json:"startLine"`
	}
	sarifLogical struct {
		FullyQualifiedName string `json:"fullyQualifiedName"`
		Kind               string `json:"kind"`
	}
)

// writeSARIF writes one run whose driver lists the whole catalogue, so that
// dashboards can show every rule berth checks, not only those broken.
func writeSARIF(w io.Writer, r *Report) error {
	rules := reportRules(r)
	driver := sarifDriver{
		Name:           "berth",
		InformationURI: "https://berth.io",
		Version:        version.Berth,
		Rules:          make([]sarifRule, len(rules)),
	}
	index := make(map[string]int, len(rules))
	for i, rule := range rules {
		index[rule.ID] = i
		driver.Rules[i] = sarifRule{
			ID:                   rule.ID,
			Name:                 ruleName(rule.ID),
			ShortDescription:     sarifTextOf(rule.Title),
			FullDescription:      sarifTextOf(rule.Why),
			Help:                 sarifTextOf(rule.Fix),
			DefaultConfiguration: sarifConfig{Level: sarifLevel(rule.Severity)},
		}
	}
	results := make([]sarifResult, len(r.Findings))
	for i, f := range r.Findings {
		results[i] = sarifResultOf(f, index[f.Rule])
	}
	return encodeJSON(w, sarifLog{
		Schema:  "https://json.schemastore.org/sarif-2.1.0.json",
		Version: "2.1.0",
		Runs:    []sarifRun{{Tool: sarifTool{Driver: driver}, Results: results}},
	})
}

func sarifResultOf(f Finding, ruleIndex int) sarifResult {
	text := f.Message
	if f.Fix != "" {
		text += " Fix: " + f.Fix
	}
	loc := sarifLocation{LogicalLocations: []sarifLogical{{
		FullyQualifiedName: qualifiedName(f.Object),
		Kind:               "object",
	}}}
	if f.File != "" {
		loc.PhysicalLocation = &sarifPhysical{ArtifactLocation: sarifArtifact{URI: fileURI(f.File)}}
		if f.Line > 0 {
			loc.PhysicalLocation.Region = &sarifRegion{StartLine: f.Line}
		}
	}
	res := sarifResult{
		RuleID:    f.Rule,
		RuleIndex: ruleIndex,
		Level:     sarifLevel(f.Severity),
		Message:   sarifText{Text: text},
		Locations: []sarifLocation{loc},
	}
	if f.Field != "" {
		res.Properties = map[string]string{"field": f.Field}
	}
	return res
}

// sarifTextOf is nil for an empty text: SARIF requires a message's text
// to be non-empty when the message is present.
func sarifTextOf(s string) *sarifText {
	if s == "" {
		return nil
	}
	return &sarifText{Text: s}
}

func sarifLevel(s Severity) string {
	if s == Error {
		return "error"
	}
	return "warning"
}

// ruleName is the rule's ID as SARIF's CamelCase name:
// "berth/gpu-limit" is "GpuLimit".
func ruleName(id string) string {
	var b strings.Builder
	for part := range strings.SplitSeq(strings.TrimPrefix(id, "berth/"), "-") {
		if part != "" {
			b.WriteString(strings.ToUpper(part[:1]) + part[1:])
		}
	}
	return b.String()
}

// qualifiedName names an object as namespace/kind/name, or kind/name
// when it is cluster-scoped: "team-a/Deployment/web", "Namespace/team-a".
func qualifiedName(o Object) string {
	if o.Namespace == "" {
		return o.Kind + "/" + o.Name
	}
	return o.Namespace + "/" + o.Kind + "/" + o.Name
}

// fileURI is the file's path as a relative URI reference, with forward
// slashes and with spaces and the like escaped, as SARIF requires.
func fileURI(file string) string {
	return (&url.URL{Path: filepath.ToSlash(file)}).String()
}
