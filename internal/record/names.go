package record

import (
	"crypto/sha256"
	"encoding/hex"
)

// name is the row name of the workload NAMESPACE/NAME: its name as a
// DNS-1123 label, or with Anonymize, prefix, "-" and a stable hash.
func (r *recorder) name(prefix, namespace, name string) string {
	if r.o.Anonymize {
		return Anonymous(prefix, namespace, name)
	}
	return dnsLabel(name)
}

// Anonymous is the name Anonymize writes for NAMESPACE/NAME: prefix, "-",
// and the first 10 hex digits of the SHA-256 of NAMESPACE/NAME, the same
// in every recording.
func Anonymous(prefix, namespace, name string) string {
	return prefix + "-" + hash(namespace+"/"+name, 10)
}

func hash(s string, digits int) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])[:digits]
}

// names gives each row a name of its own within its team, the later of
// two that share one (two namespaces of a team, or a name used again)
// taking "-" and 5 hex digits of the SHA-256 of its UID.
func (r *recorder) names(rows []Row) {
	seen := map[string]bool{}
	for i := range rows {
		key := rows[i].Team + "/" + rows[i].Name
		if seen[key] {
			rows[i].Name = Distinct(rows[i].Name, rows[i].UID)
			key = rows[i].Team + "/" + rows[i].Name
		}
		seen[key] = true
	}
}

// Distinct is name made distinct by uid: cut to leave room, "-", and 5
// hex digits of the SHA-256 of uid.
func Distinct(name, uid string) string {
	return name[:min(len(name), 57)] + "-" + hash(uid, 5)
}
