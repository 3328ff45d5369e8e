package plans

import (
	"strings"
)

// Custom domain names (docs/behaviour.md, "Custom domain names"): AWS's
// REGIONAL DomainName, served by the gateway's HTTPS listener with the
// domain's own certificate.

// EndpointRegional is the one endpoint type a tollgate domain name has.
const EndpointRegional = "REGIONAL"

// SecurityPolicyTLS12 is the one security policy tollgate serves: TLS 1.2
// and newer.
const SecurityPolicyTLS12 = "TLS_1_2"

// DomainNameAvailable is the status of every stored domain name: the
// gateway serves it as soon as the config reaches it.
const DomainNameAvailable = "AVAILABLE"

// MaxDomainNameLen bounds a domain name, as DNS does (253 characters
// without the root's dot).
const MaxDomainNameLen = 253

// DomainName is a custom domain name, AWS's DomainName as GetDomainName
// returns it: {domainName, certificateName, certificateUploadDate,
// regionalCertificateName, regionalCertificateArn, endpointConfiguration,
// domainNameStatus, securityPolicy, tags}. The certificate itself
// (DomainCertificate) is never part of it.
//
// DomainName is lower case. CertificateName and RegionalCertificateName
// are labels. RegionalCertificateArn, when set, names a certificate the
// gateway nodes load from files of their own configuration
// (TOLLGATE_GATEWAY_TLS_CERTIFICATES) instead of one stored with the
// domain; CertificateUploadDate is the time the stored certificate was
// last given (nil with RegionalCertificateArn).
type DomainName struct {
	DomainName              string                `json:"domainName"`
	CertificateName         string                `json:"certificateName,omitempty"`
	CertificateUploadDate   *Epoch                `json:"certificateUploadDate,omitempty"`
	RegionalCertificateName string                `json:"regionalCertificateName,omitempty"`
	RegionalCertificateArn  string                `json:"regionalCertificateArn,omitempty"`
	EndpointConfiguration   EndpointConfiguration `json:"endpointConfiguration"`
	DomainNameStatus        string                `json:"domainNameStatus"`
	SecurityPolicy          string                `json:"securityPolicy"`
	Tags                    map[string]string     `json:"tags,omitempty"`
}

// EndpointConfiguration is AWS's {types: [...]}; tollgate's is always
// ["REGIONAL"].
type EndpointConfiguration struct {
	Types []string `json:"types"`
}

// Normalize fills what every stored domain name has: lower case, endpoint
// type REGIONAL, security policy TLS_1_2 (when empty) and status
// AVAILABLE.
func (d *DomainName) Normalize() {
	d.DomainName = strings.ToLower(d.DomainName)
	d.EndpointConfiguration = EndpointConfiguration{Types: []string{EndpointRegional}}
	if d.SecurityPolicy == "" {
		d.SecurityPolicy = SecurityPolicyTLS12
	}
	d.DomainNameStatus = DomainNameAvailable
}

// Validate checks the name, the labels, the security policy and the tags
// of a normalized domain name. The certificate is checked on its own
// (DomainCertificate.Validate).
func (d *DomainName) Validate() error {
	if err := ValidateDomainName(d.DomainName); err != nil {
		return err
	}
	for _, f := range []struct{ field, v string }{
		{"certificateName", d.CertificateName},
		{"regionalCertificateName", d.RegionalCertificateName},
	} {
		if err := ValidateDescription(f.field, f.v); err != nil {
			return err
		}
	}
	if d.SecurityPolicy != SecurityPolicyTLS12 {
		return Invalid("securityPolicy", "securityPolicy %q is not supported: tollgate serves TLS 1.2 and newer, use TLS_1_2", d.SecurityPolicy)
	}
	if d.RegionalCertificateArn != "" {
		if err := ValidateCertificateArn(d.RegionalCertificateArn); err != nil {
			return err
		}
	}
	return ValidateTags(d.Tags)
}

// ValidateDomainName checks a lower-case host name as AWS takes it: at most
// 253 characters, at least two labels of 1 to 63 letters, digits and
// hyphens (none at either end of a label), optionally a first label "*"
// (a wildcard domain name), and not an address. A name whose second label
// is "execute-api" is refused: the gateway routes such hosts by API id.
func ValidateDomainName(name string) error {
	bad := func(why string) error {
		return Invalid("domainName", "domainName %q %s", name, why)
	}
	if name == "" {
		return Invalid("domainName", "domainName is required")
	}
	if len(name) > MaxDomainNameLen {
		return bad("is longer than 253 characters")
	}
	labels := strings.Split(name, ".")
	if len(labels) < 2 {
		return bad("must have at least two labels, as api.example.com")
	}
	for i, l := range labels {
		if i == 0 && l == "*" {
			continue
		}
		if !validLabel(l) {
			return bad("must be labels of 1 to 63 lower-case letters, digits and inner hyphens, separated by dots (only the first label may be *)")
		}
	}
	if allDigits(labels[len(labels)-1]) {
		return bad("is an address, not a domain name")
	}
	if labels[1] == "execute-api" {
		return bad("is an execute-api host, which the gateway routes by API id")
	}
	return nil
}

func validLabel(l string) bool {
	if l == "" || len(l) > 63 || l[0] == '-' || l[len(l)-1] == '-' {
		return false
	}
	for i := 0; i < len(l); i++ {
		c := l[i]
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-') {
			return false
		}
	}
	return true
}

func allDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return s != ""
}

// MaxCertificateArnLen bounds a regionalCertificateArn, as AWS's ARNs.
const MaxCertificateArnLen = 2048

// ValidateCertificateArn checks a regionalCertificateArn: any name of 1 to
// 2048 printable characters without spaces, "=", ";" or ",", which
// separate the entries of TOLLGATE_GATEWAY_TLS_CERTIFICATES where the
// gateway nodes map it to files (an ACM ARN such as
// arn:aws:acm:eu-west-1:123456789012:certificate/1c2d... qualifies).
func ValidateCertificateArn(arn string) error {
	if len(arn) > MaxCertificateArnLen {
		return Invalid("regionalCertificateArn", "regionalCertificateArn must be at most %d characters", MaxCertificateArnLen)
	}
	for _, c := range arn {
		if c <= ' ' || c > '~' || c == '=' || c == ';' || c == ',' {
			return Invalid("regionalCertificateArn", "regionalCertificateArn %q must be printable ASCII without spaces, '=', ';' or ','", arn)
		}
	}
	return nil
}
