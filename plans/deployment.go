package plans

// Deployment is an immutable copy of an API's resources, methods and
// integrations, taken at CreateDeployment, with its gateway responses (by
// type) and authorizers. A stage serves the deployment it points to.
// Resources, GatewayResponses and Authorizers are the copy; they are not
// part of the AWS JSON shape {id, description, createdDate}.
type Deployment struct {
	ID               string                     `json:"id"`
	Description      string                     `json:"description,omitempty"`
	CreatedDate      Epoch                      `json:"createdDate"`
	Resources        []Resource                 `json:"-"`
	GatewayResponses map[string]GatewayResponse `json:"-"`
	Authorizers      []Authorizer               `json:"-"`
}
