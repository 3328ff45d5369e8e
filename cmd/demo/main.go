// Command demo creates a demo API on a running tollgate through the admin
// API, with the AWS SDK for Go v2 (the same calls `aws apigateway` makes):
// a RestApi with GET /pets and GET /pets/{petId} proxied to the echo
// upstream, stage prod, a usage plan (throttle 2 requests/s, burst 5;
// quota 1000 per DAY), an API key and its association. It prints the key,
// a curl line that calls the gateway, and an export line of the shell
// variables the README's next steps use (API_ID, KEY, KEY_ID, PLAN_ID).
//
//	demo -admin http://127.0.0.1:8001 -upstream http://127.0.0.1:8080 -gateway http://{id}.execute-api.localhost:8000
//
// Credentials come from TOLLGATE_ADMIN_ACCESS_KEY_ID and
// TOLLGATE_ADMIN_SECRET_ACCESS_KEY (SigV4, as the AWS CLI signs).
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/apigateway"
	"github.com/aws/aws-sdk-go-v2/service/apigateway/types"
)

func main() {
	adminURL := flag.String("admin", "http://127.0.0.1:8001", "tollgate admin API URL")
	upstream := flag.String("upstream", "http://127.0.0.1:8080", "echo upstream URL, as the gateway reaches it")
	gatewayURL := flag.String("gateway", "http://{id}.execute-api.localhost:8000", "gateway URL for the printed curl line; {id} is replaced by the API id")
	flag.Parse()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	client := apigateway.New(apigateway.Options{
		BaseEndpoint: aws.String(*adminURL),
		Region:       "us-east-1",
		Credentials: credentials.NewStaticCredentialsProvider(
			os.Getenv("TOLLGATE_ADMIN_ACCESS_KEY_ID"), os.Getenv("TOLLGATE_ADMIN_SECRET_ACCESS_KEY"), ""),
	})
	d, err := setup(ctx, client, strings.TrimRight(*upstream, "/"))
	if err != nil {
		fmt.Fprintln(os.Stderr, "demo:", err)
		os.Exit(1)
	}
	base := strings.ReplaceAll(*gatewayURL, "{id}", d.apiID)
	fmt.Printf("API %s, stage prod, usage plan %s (throttle 2/s burst 5, quota 1000/DAY), API key %s\n", d.apiID, d.planID, d.keyID)
	fmt.Printf("TOLLGATE_DEMO_KEY=%s\n", d.keyValue)
	fmt.Printf("TOLLGATE_DEMO_URL=%s/prod/pets\n", base)
	fmt.Printf("Try:\n  curl -i -H 'x-api-key: %s' %s/prod/pets/42\n", d.keyValue, base)
	fmt.Printf("Shell variables of the README's next steps:\n  export API_ID=%s KEY=%s KEY_ID=%s PLAN_ID=%s\n", d.apiID, d.keyValue, d.keyID, d.planID)
}

type demo struct{ apiID, planID, keyID, keyValue string }

func setup(ctx context.Context, c *apigateway.Client, upstream string) (demo, error) {
	var d demo
	suffix, err := runSuffix(ctx, c)
	if err != nil {
		return d, err
	}
	api, err := c.CreateRestApi(ctx, &apigateway.CreateRestApiInput{Name: aws.String("demo" + suffix), Description: aws.String("tollgate demo: pets on the echo upstream")})
	if err != nil {
		return d, fmt.Errorf("create rest api: %w", err)
	}
	d.apiID = aws.ToString(api.Id)
	res, err := c.GetResources(ctx, &apigateway.GetResourcesInput{RestApiId: api.Id})
	if err != nil {
		return d, fmt.Errorf("get resources: %w", err)
	}
	rootID := res.Items[0].Id
	pets, err := addResource(ctx, c, api.Id, rootID, "pets", upstream+"/pets")
	if err != nil {
		return d, err
	}
	if _, err := addResource(ctx, c, api.Id, pets, "{petId}", upstream+"/pets/{petId}"); err != nil {
		return d, err
	}
	if _, err := c.CreateDeployment(ctx, &apigateway.CreateDeploymentInput{RestApiId: api.Id, StageName: aws.String("prod")}); err != nil {
		return d, fmt.Errorf("create deployment: %w", err)
	}
	plan, err := c.CreateUsagePlan(ctx, &apigateway.CreateUsagePlanInput{
		Name:      aws.String("demo-plan" + suffix),
		Throttle:  &types.ThrottleSettings{RateLimit: 2, BurstLimit: 5},
		Quota:     &types.QuotaSettings{Limit: 1000, Period: types.QuotaPeriodTypeDay},
		ApiStages: []types.ApiStage{{ApiId: api.Id, Stage: aws.String("prod")}},
	})
	if err != nil {
		return d, fmt.Errorf("create usage plan: %w", err)
	}
	d.planID = aws.ToString(plan.Id)
	key, err := c.CreateApiKey(ctx, &apigateway.CreateApiKeyInput{Name: aws.String("demo-key" + suffix), Enabled: true})
	if err != nil {
		return d, fmt.Errorf("create api key: %w", err)
	}
	d.keyID, d.keyValue = aws.ToString(key.Id), aws.ToString(key.Value)
	if _, err := c.CreateUsagePlanKey(ctx, &apigateway.CreateUsagePlanKeyInput{UsagePlanId: plan.Id, KeyId: key.Id, KeyType: aws.String("API_KEY")}); err != nil {
		return d, fmt.Errorf("create usage plan key: %w", err)
	}
	return d, nil
}

// runSuffix returns "" for the first demo on a database and "-2", "-3"...
// for later ones, so that each run's API, plan and key have names of their
// own (tollgate config matches items by name).
func runSuffix(ctx context.Context, c *apigateway.Client) (string, error) {
	apis, err := c.GetRestApis(ctx, &apigateway.GetRestApisInput{Limit: aws.Int32(500)})
	if err != nil {
		return "", fmt.Errorf("get rest apis: %w", err)
	}
	taken := map[string]bool{}
	for _, a := range apis.Items {
		taken[aws.ToString(a.Name)] = true
	}
	if !taken["demo"] {
		return "", nil
	}
	n := 2
	for taken["demo-"+strconv.Itoa(n)] {
		n++
	}
	return "-" + strconv.Itoa(n), nil
}

// addResource creates pathPart under parent with GET (API key required)
// proxied to uri, and returns the new resource's id.
func addResource(ctx context.Context, c *apigateway.Client, apiID, parent *string, pathPart, uri string) (*string, error) {
	r, err := c.CreateResource(ctx, &apigateway.CreateResourceInput{RestApiId: apiID, ParentId: parent, PathPart: aws.String(pathPart)})
	if err != nil {
		return nil, fmt.Errorf("create resource %s: %w", pathPart, err)
	}
	if _, err := c.PutMethod(ctx, &apigateway.PutMethodInput{RestApiId: apiID, ResourceId: r.Id, HttpMethod: aws.String("GET"),
		AuthorizationType: aws.String("NONE"), ApiKeyRequired: true}); err != nil {
		return nil, fmt.Errorf("put method GET %s: %w", pathPart, err)
	}
	if _, err := c.PutIntegration(ctx, &apigateway.PutIntegrationInput{RestApiId: apiID, ResourceId: r.Id, HttpMethod: aws.String("GET"),
		Type: types.IntegrationTypeHttpProxy, IntegrationHttpMethod: aws.String("GET"), Uri: aws.String(uri)}); err != nil {
		return nil, fmt.Errorf("put integration GET %s: %w", pathPart, err)
	}
	return r.Id, nil
}
