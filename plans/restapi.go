package plans

import "unicode/utf8"

// Size limits of docs/behaviour.md ("Limits"), in characters.
const (
	MaxNameLen        = 1024
	MaxDescriptionLen = 4096
	MaxTags           = 50
)

// ApiKeySourceHeader is the only supported apiKeySource: the key comes from
// the x-api-key request header.
const ApiKeySourceHeader = "HEADER"

// RestApi is an API: a tree of resources deployed to stages. JSON shape of
// AWS's RestApi: {id, name, description, apiKeySource, rootResourceId,
// createdDate, tags}. RootResourceID is the id of its "/" resource, set
// by the store (an input's is ignored).
type RestApi struct {
	ID             string            `json:"id"`
	Name           string            `json:"name"`
	Description    string            `json:"description,omitempty"`
	ApiKeySource   string            `json:"apiKeySource"`
	RootResourceID string            `json:"rootResourceId,omitempty"`
	CreatedDate    Epoch             `json:"createdDate"`
	Tags           map[string]string `json:"tags,omitempty"`
}

// Normalize fills the default an API is stored with: apiKeySource HEADER.
func (a *RestApi) Normalize() {
	if a.ApiKeySource == "" {
		a.ApiKeySource = ApiKeySourceHeader
	}
}

// Validate checks name, description, apiKeySource (empty means HEADER) and
// tags, without changing a. It returns a KindInvalid *Error naming the
// first bad field.
func (a *RestApi) Validate() error {
	if err := ValidateName("name", a.Name); err != nil {
		return err
	}
	if err := ValidateDescription("description", a.Description); err != nil {
		return err
	}
	if a.ApiKeySource != "" && a.ApiKeySource != ApiKeySourceHeader {
		return Invalid("apiKeySource", "apiKeySource %q is not supported: only HEADER", a.ApiKeySource)
	}
	return ValidateTags(a.Tags)
}

// ValidateName requires a non-empty name of at most MaxNameLen characters.
func ValidateName(field, name string) error {
	if name == "" {
		return Invalid(field, "%s is required", field)
	}
	if utf8.RuneCountInString(name) > MaxNameLen {
		return Invalid(field, "%s must be at most %d characters", field, MaxNameLen)
	}
	return nil
}

// ValidateDescription allows an empty description of at most
// MaxDescriptionLen characters.
func ValidateDescription(field, d string) error {
	if utf8.RuneCountInString(d) > MaxDescriptionLen {
		return Invalid(field, "%s must be at most %d characters", field, MaxDescriptionLen)
	}
	return nil
}

// ValidateTags allows at most MaxTags tags with keys of 1..128 and values of
// at most 256 characters, as AWS.
func ValidateTags(tags map[string]string) error {
	if len(tags) > MaxTags {
		return Invalid("tags", "at most %d tags are allowed", MaxTags)
	}
	for k, v := range tags {
		if k == "" || utf8.RuneCountInString(k) > 128 {
			return Invalid("tags", "tag keys must be 1 to 128 characters")
		}
		if utf8.RuneCountInString(v) > 256 {
			return Invalid("tags", "tag %q: values must be at most 256 characters", k)
		}
	}
	return nil
}
