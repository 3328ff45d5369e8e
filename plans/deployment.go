package plans

// Deployment is an immutable copy of an API's resources, methods and
// integrations, taken at CreateDeployment. A stage serves the deployment it
// points to. Resources is the copy; it is not part of the AWS JSON shape
// {id, description, createdDate}.
type Deployment struct {
	ID          string     `json:"id"`
	Description string     `json:"description,omitempty"`
	CreatedDate Epoch      `json:"createdDate"`
	Resources   []Resource `json:"-"`
}
